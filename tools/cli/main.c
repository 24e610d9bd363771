/* main.c — the fgemma command-line tool: one binary, one subcommand per job. */
#include "cli.h"

#include <string.h>

/* declared here: cli.h belongs to the shared helpers */

typedef struct command {
  const char *name;
  int (*run)(int argc, char **argv);
  const char *summary;
} command;

static const command k_commands[] = {
    {"call", cmd_call, "answer utterances with function calls from a tool catalog (the NLU engine)"},
    {"serve", cmd_serve, "serve the model over HTTP: OpenAI-compatible chat completions with tools, /v1/nlu"},
    {"prompt", cmd_prompt, "print the FunctionGemma prompt rendered from a tool catalog"},
    {"bench", cmd_bench, "measure the NLU scenario and prefill/chunk/decode speed"},
    {"info", cmd_info, "print a model's architecture, dimensions, types and sizes"},
    {"generate", cmd_generate, "greedy-decode token ids (session path, or --reference)"},
    {"logits", cmd_logits, "write raw next-token logits at chosen positions (for oracles)"},
    {"tokenize", cmd_tokenize, "print the token ids of a text"},
    {"detokenize", cmd_detokenize, "print the text of token ids"},
    {"perplexity", cmd_perplexity, "perplexity of a model over a text file, in windows"},
    {"eval", cmd_eval, "logit agreement of a model (and head) with its F32 reference"},
    {"convert", cmd_convert, "convert a Hugging Face Gemma 3 checkpoint, a GGUF or a PEFT LoRA adapter to a GGUF"},
    {"requant-head", cmd_requant_head, "copy a GGUF with a quantized output.weight (LM head)"},
    {"gen-model", cmd_gen_model, "write a synthetic gemma3 GGUF with random weights"},
    {"tune", cmd_tune, "turn an app's tool spec (*.tune.json) into training data, a LoRA adapter and a report"},
    {"gen-lora", cmd_gen_lora, "write a synthetic LoRA adapter (llama.cpp's GGUF format) for a base model"},
    {NULL, NULL, NULL},
};

static void usage(FILE *f) {
  fprintf(f,
          "usage: fgemma COMMAND [options]\n\n"
          "fgemma %s: FunctionGemma / Gemma 3 GGUF runtime.\n\ncommands:\n",
          fg_version_string());
  for (const command *c = k_commands; c->name; c++) fprintf(f, "  %-12s %s\n", c->name, c->summary);
  fprintf(f, "\n'fgemma COMMAND --help' describes a command. The environment variable FGEMMA_MODEL names a\n"
             "default model for commands that take -m; those also take --head-type q8_0|q4_0 (a replacement LM\n"
             "head made at load) and --lora FILE[:SCALE] (LoRA adapters, repeatable; --lora-merge off|f32|bf16|q8_0).\n");
}

int main(int argc, char **argv) {
  if (fg_version_number() != FG_VERSION_NUMBER) {
    fprintf(stderr, "fgemma: error: library version %u does not match the header (%u)\n", fg_version_number(),
            FG_VERSION_NUMBER);
    return 1;
  }
  if (argc < 2) {
    usage(stderr);
    return 2;
  }
  const char *cmd = argv[1];
  if (strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0 || strcmp(cmd, "help") == 0) {
    if (strcmp(cmd, "help") == 0 && argc > 2) {
      for (const command *c = k_commands; c->name; c++) {
        if (strcmp(c->name, argv[2]) == 0) {
          char *args[] = {argv[2], "--help", NULL};
          return c->run(2, args);
        }
      }
    }
    usage(stdout);
    return 0;
  }
  if (strcmp(cmd, "--version") == 0 || strcmp(cmd, "version") == 0) {
    printf("fgemma %s\n", fg_version_string());
    return 0;
  }
  for (const command *c = k_commands; c->name; c++)
    if (strcmp(c->name, cmd) == 0) return c->run(argc - 1, argv + 1);
  fprintf(stderr, "fgemma: error: unknown command '%s'\n\n", cmd);
  usage(stderr);
  return 2;
}
