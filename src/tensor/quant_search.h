/* quant_search.h — searched (least-squares) quantizers for the block types of quant_blocks.c: what
 * `fgemma convert` writes. fg_quantize_row (dtype.h) keeps the plain reference fits (gen-model's). */
#ifndef FG_QUANT_SEARCH_H
#define FG_QUANT_SEARCH_H

#include "tensor/dtype.h"

/* true for the types fg_quantize_row_searched fits by search (Q4_0, Q4_1, Q5_0, Q5_1, Q2_K .. Q6_K,
 * IQ4_NL, IQ4_XS); the others (F32, F16, BF16, Q8_0) it hands to fg_quantize_row. */
bool fg_quant_is_searched(uint32_t type);

/* One row of n values (a multiple of the type's block size) into type. Deterministic: the bytes
 * depend on the values only (no state, no threads). */
void fg_quantize_row_searched(uint32_t type, const float *FG_RESTRICT src, void *FG_RESTRICT dst, size_t n);

#endif /* FG_QUANT_SEARCH_H */
