package dev.fgemma

/**
 * A small JSON reader for the results fgemma returns (valid JSON by construction): objects become
 * LinkedHashMap (key order kept), arrays List, strings String, integers Long (Double when they do
 * not fit a long), other numbers Double, true/false Boolean, null null.
 */
internal class Json private constructor(private val s: String) {
    private var i = 0

    companion object {
        fun parse(text: String): Any? {
            val j = Json(text)
            j.ws()
            val v = j.value()
            j.ws()
            if (j.i != text.length) j.fail("trailing characters")
            return v
        }
    }

    fun fail(what: String): Nothing = throw IllegalArgumentException("fgemma: bad JSON at offset $i: $what")

    private fun ws() {
        while (i < s.length && (s[i] == ' ' || s[i] == '\n' || s[i] == '\r' || s[i] == '\t')) i++
    }

    private fun value(): Any? {
        if (i >= s.length) fail("unexpected end")
        return when (s[i]) {
            '{' -> obj()
            '[' -> arr()
            '"' -> str()
            't' -> word("true", true)
            'f' -> word("false", false)
            'n' -> word("null", null)
            else -> num()
        }
    }

    private fun word(w: String, v: Any?): Any? {
        if (!s.startsWith(w, i)) fail("expected $w")
        i += w.length
        return v
    }

    private fun obj(): Map<String, Any?> {
        val m = LinkedHashMap<String, Any?>()
        i++
        ws()
        if (i < s.length && s[i] == '}') {
            i++
            return m
        }
        while (true) {
            ws()
            if (i >= s.length || s[i] != '"') fail("expected a key")
            val k = str()
            ws()
            if (i >= s.length || s[i] != ':') fail("expected ':'")
            i++
            ws()
            m[k] = value()
            ws()
            if (i >= s.length) fail("unexpected end")
            when (s[i++]) {
                ',' -> continue
                '}' -> return m
                else -> fail("expected ',' or '}'")
            }
        }
    }

    private fun arr(): List<Any?> {
        val l = ArrayList<Any?>()
        i++
        ws()
        if (i < s.length && s[i] == ']') {
            i++
            return l
        }
        while (true) {
            ws()
            l.add(value())
            ws()
            if (i >= s.length) fail("unexpected end")
            when (s[i++]) {
                ',' -> continue
                ']' -> return l
                else -> fail("expected ',' or ']'")
            }
        }
    }

    private fun str(): String {
        val b = StringBuilder()
        i++ // opening quote
        while (true) {
            if (i >= s.length) fail("unterminated string")
            val c = s[i++]
            when (c) {
                '"' -> return b.toString()
                '\\' -> {
                    if (i >= s.length) fail("unterminated escape")
                    when (val e = s[i++]) {
                        '"' -> b.append('"')
                        '\\' -> b.append('\\')
                        '/' -> b.append('/')
                        'b' -> b.append('\b')
                        'f' -> b.append('\u000c')
                        'n' -> b.append('\n')
                        'r' -> b.append('\r')
                        't' -> b.append('\t')
                        'u' -> {
                            if (i + 4 > s.length) fail("short \\u escape")
                            val h = s.substring(i, i + 4).toIntOrNull(16) ?: fail("bad \\u escape")
                            b.append(h.toChar()) // surrogate pairs arrive as two escapes: appended in order
                            i += 4
                        }
                        else -> fail("bad escape \\$e")
                    }
                }
                else -> b.append(c)
            }
        }
    }

    private fun num(): Any {
        val start = i
        if (i < s.length && s[i] == '-') i++
        var integer = true
        while (i < s.length) {
            val c = s[i]
            if (c in '0'..'9') {
                i++
            } else if (c == '.' || c == 'e' || c == 'E' || c == '+' || c == '-') {
                integer = false
                i++
            } else {
                break
            }
        }
        val t = s.substring(start, i)
        if (t.isEmpty() || t == "-") fail("expected a value")
        if (integer) t.toLongOrNull()?.let { return it }
        return t.toDoubleOrNull() ?: fail("bad number '$t'")
    }
}
