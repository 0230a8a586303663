# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""The session-file scanner, compiled (see ``_scanner_py.py``, its reference, for what it returns).

Over the bytes of the file it finds each line's end (``memchr``), checks that the line is JSON
that orjson reads exactly as written here (strict grammar, UTF-8, no lone surrogate, numbers
within a double's range, nesting within orjson's limit) and reads ``type``, ``id``, ``parentId``
and the message's ``role``, ``toolName`` and ``usage`` from it without building any object. Ids
are resolved to positions through a hash table of their bytes (an escape-free JSON string is
exactly what ``orjson.dumps`` writes for it), the id column and its CRC-32 hashes are built in C.

A line it cannot vouch for (an escape in a key or an id, a surrogate escape, a duplicate key the
index reads, an exponent too large, anything malformed, deeper nesting) is handed to orjson, the
full decoder, and read from the dict exactly as the reference does; orjson raises for what it
rejects. So the two agree on every input (tests/perf/test_scanner_agree.py).

Internal module (the offset index's cold open); not part of the public API.
"""

from cpython cimport array as carray
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_FromStringAndSize, PyBytes_GET_SIZE
from libc.stdint cimport int32_t, int64_t, uint32_t, uint64_t
from libc.stdlib cimport free, malloc, realloc, strtod
from libc.string cimport memchr, memcmp, memcpy, memset

import array

import orjson

COMPILED = True

cdef enum:
    # orjson reads up to 1024 levels; beyond this the line goes to orjson, which decides.
    MAX_DEPTH = 512
    # Numbers whose magnitude could reach a double's infinity (which orjson rejects) go to orjson.
    MAX_MAGNITUDE = 300

cdef enum:
    T_OTHER = 0
    T_MESSAGE = 1
    T_MODEL_USAGE = 2
    T_STATE = 3

cdef enum:
    R_OTHER = 0
    R_ASSISTANT = 1
    R_TOOL_RESULT = 2

cdef struct Line:
    int kind
    Py_ssize_t id_at       # span of the id's JSON, quotes included
    Py_ssize_t id_len      # < 0: no string id
    Py_ssize_t parent_at
    Py_ssize_t parent_len  # < 0: no string parent
    int message            # "message" is an object
    int role
    int task               # "toolName" is "task"
    Py_ssize_t usage_at
    Py_ssize_t usage_len   # < 0: no "usage" key

cdef struct Names:
    int count
    const unsigned char** ptr
    Py_ssize_t* length

cdef uint32_t CRC_TABLE[256]
cdef unsigned char PLAIN[256]  # bytes that continue a string without a check

cdef extern from *:
    """
    /* The byte at which a word's lowest flagged byte is (little-endian GCC and Clang); 0
       elsewhere, where plain_run then looks at the word's bytes one by one. */
    #if (defined(__GNUC__) || defined(__clang__)) && defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    #define OMP_FIRST_FLAGGED(hit) ((Py_ssize_t)(__builtin_ctzll(hit) >> 3))
    #else
    #define OMP_FIRST_FLAGGED(hit) ((Py_ssize_t)0)
    #endif
    """
    Py_ssize_t OMP_FIRST_FLAGGED(uint64_t hit) noexcept nogil

cdef extern from *:
    """
    /* Sixteen bytes at a time where SSE2 is there (every x86-64): the first byte at or after i
       that is a quote, a backslash, below 0x20 or not ASCII (a signed compare with 0x20 flags
       both of the last two), or where fewer than sixteen bytes are left. Elsewhere the stub is
       never called (OMP_WIDE_RUN is 0) and plain_run reads eight bytes at a time. */
    #if defined(__SSE2__) && (defined(__GNUC__) || defined(__clang__))
    #include <emmintrin.h>
    #define OMP_WIDE_RUN 1
    static inline Py_ssize_t omp_wide_run(const unsigned char *s, Py_ssize_t i, Py_ssize_t n) {
        const __m128i quote = _mm_set1_epi8(0x22), backslash = _mm_set1_epi8(0x5C);
        const __m128i space = _mm_set1_epi8(0x20);
        while (i + 16 <= n) {
            __m128i x = _mm_loadu_si128((const __m128i *)(s + i));
            __m128i stop = _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(x, quote), _mm_cmpeq_epi8(x, backslash)),
                                        _mm_cmplt_epi8(x, space));
            int mask = _mm_movemask_epi8(stop);
            if (mask) return i + __builtin_ctz((unsigned int)mask);
            i += 16;
        }
        return i;
    }
    #else
    #define OMP_WIDE_RUN 0
    static inline Py_ssize_t omp_wide_run(const unsigned char *s, Py_ssize_t i, Py_ssize_t n) { (void)s; (void)n; return i; }
    #endif

    /* memmem where the C library has it (glibc, the BSDs, macOS: a shift-table search several
       times faster than CPython 3.11's bytes.find on long haystacks); else memchr on the first
       byte and memcmp. */
    #if defined(__GLIBC__) || defined(__APPLE__) || defined(__FreeBSD__) || defined(__OpenBSD__) || defined(__NetBSD__)
    #define omp_memmem memmem
    #else
    static void *omp_memmem(const void *haystack, size_t n, const void *needle, size_t m) {
        const unsigned char *h = (const unsigned char *)haystack, *end = h + n, *p;
        const unsigned char *k = (const unsigned char *)needle;
        if (m == 0) return (void *)h;
        while ((size_t)(end - h) >= m && (p = (const unsigned char *)memchr(h, k[0], (size_t)(end - h) - m + 1))) {
            if (memcmp(p, k, m) == 0) return (void *)p;
            h = p + 1;
        }
        return NULL;
    }
    #endif
    """
    int OMP_WIDE_RUN
    Py_ssize_t omp_wide_run(const unsigned char* s, Py_ssize_t i, Py_ssize_t n) noexcept nogil
    void* omp_memmem(const void* haystack, size_t n, const void* needle, size_t m) noexcept nogil

# Set by scan_string when the bytes \u occur in a string it reads (a \u escape, or an
# escaped backslash before a ``u``): the main loop clears it before each line and reads it right
# after, with no Python code in between, so no other thread's scan can touch it meanwhile.
cdef int u_escape_seen = 0


cdef void _init_tables():
    cdef uint32_t c
    cdef int n, k
    for n in range(256):
        c = n
        for k in range(8):
            if c & 1:
                c = 0xEDB88320U ^ (c >> 1)
            else:
                c = c >> 1
        CRC_TABLE[n] = c
        PLAIN[n] = 1 if (0x20 <= n < 0x80 and n != 0x22 and n != 0x5C) else 0


_init_tables()


cdef inline uint32_t crc32(const unsigned char* s, Py_ssize_t n) noexcept nogil:
    cdef uint32_t c = 0xFFFFFFFFU
    cdef Py_ssize_t i
    for i in range(n):
        c = CRC_TABLE[(c ^ s[i]) & 0xFF] ^ (c >> 8)
    return c ^ 0xFFFFFFFFU


cdef inline Py_ssize_t skip_ws(const unsigned char* s, Py_ssize_t i, Py_ssize_t n) noexcept nogil:
    while i < n and (s[i] == 32 or s[i] == 9 or s[i] == 13 or s[i] == 10):
        i += 1
    return i


cdef inline int hexval(unsigned char c) noexcept nogil:
    if 48 <= c <= 57:
        return c - 48
    if 97 <= c <= 102:
        return c - 87
    if 65 <= c <= 70:
        return c - 55
    return -1


cdef inline Py_ssize_t utf8(const unsigned char* s, Py_ssize_t i, Py_ssize_t n) noexcept nogil:
    # One strict UTF-8 sequence starting at s[i] (>= 0x80); the index after it, or -1.
    cdef unsigned char c = s[i]
    cdef int more
    cdef unsigned char low = 0x80, high = 0xBF
    if 0xC2 <= c <= 0xDF:
        more = 1
    elif c == 0xE0:
        more, low = 2, 0xA0
    elif c == 0xED:
        more, high = 2, 0x9F
    elif 0xE1 <= c <= 0xEF:
        more = 2
    elif c == 0xF0:
        more, low = 3, 0x90
    elif 0xF1 <= c <= 0xF3:
        more = 3
    elif c == 0xF4:
        more, high = 3, 0x8F
    else:
        return -1
    if i + more >= n:
        return -1
    if not (low <= s[i + 1] <= high):
        return -1
    if more >= 2 and not (0x80 <= s[i + 2] <= 0xBF):
        return -1
    if more == 3 and not (0x80 <= s[i + 3] <= 0xBF):
        return -1
    return i + 1 + more


cdef uint64_t ONES = 0x0101010101010101ULL
cdef uint64_t HIGH = 0x8080808080808080ULL
cdef uint64_t QUOTES = 0x2222222222222222ULL
cdef uint64_t BACKSLASHES = 0x5C5C5C5C5C5C5C5CULL
cdef uint64_t SPACES = 0x2020202020202020ULL


cdef inline Py_ssize_t plain_run(const unsigned char* s, Py_ssize_t i, Py_ssize_t n) noexcept nogil:
    # Past the bytes that continue a string without a check, eight at a time: a word stops the
    # run if any byte may be a quote, a backslash, a control character or not ASCII (the tests
    # can only err towards stopping; the bytes are then looked at one by one).
    cdef uint64_t x, q, b, hit
    if OMP_WIDE_RUN:
        i = omp_wide_run(s, i, n)
        if i + 16 <= n:
            return i  # (at a byte that stops the run)
    while i + 8 <= n:
        memcpy(&x, s + i, 8)
        q = x ^ QUOTES
        b = x ^ BACKSLASHES
        hit = (((q - ONES) & ~q) | ((b - ONES) & ~b) | ((x - SPACES) & ~x) | x) & HIGH
        if hit:
            # A borrow can flag a byte above a flagged one, never below it: the lowest flagged
            # byte is the first that is not plain.
            i += OMP_FIRST_FLAGGED(hit)
            break
        i += 8
    while i < n and PLAIN[s[i]]:
        i += 1
    return i


cdef Py_ssize_t scan_string(const unsigned char* s, Py_ssize_t i, Py_ssize_t n, int* escaped) noexcept nogil:
    # s[i] is '"'; the index after the closing quote, or -1 (not read exactly).
    global u_escape_seen
    cdef unsigned char c
    cdef int a, b, d, e
    cdef int code
    i += 1
    while True:
        i = plain_run(s, i, n)
        if i >= n:
            return -1
        c = s[i]
        if c == 34:
            return i + 1
        if c == 92:
            escaped[0] = 1
            if i + 1 >= n:
                return -1
            c = s[i + 1]
            if c == 117:
                u_escape_seen = 1
                if i + 5 >= n:
                    return -1
                a, b, d, e = hexval(s[i + 2]), hexval(s[i + 3]), hexval(s[i + 4]), hexval(s[i + 5])
                if a < 0 or b < 0 or d < 0 or e < 0:
                    return -1
                code = (a << 12) | (b << 8) | (d << 4) | e
                if 0xD800 <= code <= 0xDFFF:
                    return -1  # pairs and lone surrogates: orjson decides
                i += 6
            elif c == 34 or c == 92 or c == 47 or c == 98 or c == 102 or c == 110 or c == 114 or c == 116:
                if c == 92 and i + 2 < n and s[i + 2] == 117:
                    u_escape_seen = 1  # (the bytes \u: an escaped backslash, then a u)
                i += 2
            else:
                return -1
        elif c < 32:
            return -1
        else:
            i = utf8(s, i, n)
            if i < 0:
                return -1


cdef Py_ssize_t scan_number(const unsigned char* s, Py_ssize_t i, Py_ssize_t n) noexcept nogil:
    cdef Py_ssize_t digits = 0
    cdef long exponent = 0
    cdef int negative_exponent = 0
    if s[i] == 45:
        i += 1
    if i >= n:
        return -1
    if s[i] == 48:
        i += 1
        digits = 1
    elif 49 <= s[i] <= 57:
        while i < n and 48 <= s[i] <= 57:
            i += 1
            digits += 1
    else:
        return -1
    if i < n and s[i] == 46:
        i += 1
        if i >= n or not (48 <= s[i] <= 57):
            return -1
        while i < n and 48 <= s[i] <= 57:
            i += 1
    if i < n and (s[i] == 101 or s[i] == 69):
        i += 1
        if i < n and (s[i] == 43 or s[i] == 45):
            negative_exponent = s[i] == 45
            i += 1
        if i >= n or not (48 <= s[i] <= 57):
            return -1
        while i < n and 48 <= s[i] <= 57:
            exponent = exponent * 10 + (s[i] - 48)
            if exponent > 10000:
                return -1
            i += 1
        if negative_exponent:
            exponent = -exponent
    if digits + exponent > MAX_MAGNITUDE or digits > MAX_MAGNITUDE:
        return -1
    return i


cdef Py_ssize_t scan_value(const unsigned char* s, Py_ssize_t i, Py_ssize_t n, int depth) noexcept nogil:
    cdef unsigned char c = s[i]
    cdef int escaped = 0
    if c == 34:
        return scan_string(s, i, n, &escaped)
    if c == 123:
        return scan_object(s, i, n, depth + 1)
    if c == 91:
        return scan_array(s, i, n, depth + 1)
    if c == 116:
        return i + 4 if i + 4 <= n and memcmp(s + i, b"true", 4) == 0 else -1
    if c == 102:
        return i + 5 if i + 5 <= n and memcmp(s + i, b"false", 5) == 0 else -1
    if c == 110:
        return i + 4 if i + 4 <= n and memcmp(s + i, b"null", 4) == 0 else -1
    if c == 45 or 48 <= c <= 57:
        return scan_number(s, i, n)
    return -1


cdef Py_ssize_t scan_object(const unsigned char* s, Py_ssize_t i, Py_ssize_t n, int depth) noexcept nogil:
    cdef int escaped = 0
    if depth > MAX_DEPTH:
        return -1
    i = skip_ws(s, i + 1, n)
    if i < n and s[i] == 125:
        return i + 1
    while True:
        if i >= n or s[i] != 34:
            return -1
        i = scan_string(s, i, n, &escaped)
        if i < 0:
            return -1
        i = skip_ws(s, i, n)
        if i >= n or s[i] != 58:
            return -1
        i = skip_ws(s, i + 1, n)
        if i >= n:
            return -1
        i = scan_value(s, i, n, depth)
        if i < 0:
            return -1
        i = skip_ws(s, i, n)
        if i >= n:
            return -1
        if s[i] == 44:
            i = skip_ws(s, i + 1, n)
        elif s[i] == 125:
            return i + 1
        else:
            return -1


cdef Py_ssize_t scan_array(const unsigned char* s, Py_ssize_t i, Py_ssize_t n, int depth) noexcept nogil:
    if depth > MAX_DEPTH:
        return -1
    i = skip_ws(s, i + 1, n)
    if i < n and s[i] == 93:
        return i + 1
    while True:
        if i >= n:
            return -1
        i = scan_value(s, i, n, depth)
        if i < 0:
            return -1
        i = skip_ws(s, i, n)
        if i >= n:
            return -1
        if s[i] == 44:
            i = skip_ws(s, i + 1, n)
        elif s[i] == 93:
            return i + 1
        else:
            return -1


cdef inline int key_is(const unsigned char* s, Py_ssize_t at, Py_ssize_t end, const char* name, Py_ssize_t size) noexcept nogil:
    # The key s[at:end] (quotes included) is "name".
    return end - at == size + 2 and memcmp(s + at + 1, name, size) == 0


cdef Py_ssize_t scan_message(const unsigned char* s, Py_ssize_t i, Py_ssize_t n, Line* line) noexcept nogil:
    # The value of "message", an object at s[i]; reads role, toolName and usage from its top level.
    cdef int escaped = 0
    cdef Py_ssize_t key_at, key_end, value_at, value_end
    cdef int seen_role = 0, seen_tool = 0
    i = skip_ws(s, i + 1, n)
    if i < n and s[i] == 125:
        return i + 1
    while True:
        if i >= n or s[i] != 34:
            return -1
        key_at = i
        escaped = 0
        i = scan_string(s, i, n, &escaped)
        if i < 0 or escaped:
            return -1  # an escaped key could spell one the index reads
        key_end = i
        i = skip_ws(s, i, n)
        if i >= n or s[i] != 58:
            return -1
        i = skip_ws(s, i + 1, n)
        if i >= n:
            return -1
        value_at = i
        if key_is(s, key_at, key_end, "role", 4):
            if seen_role:
                return -1
            seen_role = 1
            if s[i] == 34:
                escaped = 0
                i = scan_string(s, i, n, &escaped)
                if i < 0 or escaped:
                    return -1
                if key_is(s, value_at, i, "assistant", 9):
                    line.role = R_ASSISTANT
                elif key_is(s, value_at, i, "toolResult", 10):
                    line.role = R_TOOL_RESULT
            else:
                i = scan_value(s, i, n, 2)
        elif key_is(s, key_at, key_end, "toolName", 8):
            if seen_tool:
                return -1
            seen_tool = 1
            if s[i] == 34:
                escaped = 0
                i = scan_string(s, i, n, &escaped)
                if i < 0 or escaped:
                    return -1
                line.task = key_is(s, value_at, i, "task", 4)
            else:
                i = scan_value(s, i, n, 2)
        elif key_is(s, key_at, key_end, "usage", 5):
            if line.usage_len >= 0:
                return -1
            i = scan_value(s, i, n, 2)
            if i < 0:
                return -1
            line.usage_at, line.usage_len = value_at, i - value_at
        else:
            i = scan_value(s, i, n, 2)
        if i < 0:
            return -1
        i = skip_ws(s, i, n)
        if i >= n:
            return -1
        if s[i] == 44:
            i = skip_ws(s, i + 1, n)
        elif s[i] == 125:
            return i + 1
        else:
            return -1


cdef int scan_line(const unsigned char* s, Py_ssize_t n, Line* line, Names* stateful) noexcept nogil:
    # Read one line (s[:n], no newline); 1 if it was read exactly, 0 if orjson must decide.
    cdef Py_ssize_t i, key_at, key_end, value_at
    cdef int escaped = 0, seen_type = 0, seen_id = 0, seen_parent = 0, seen_message = 0, k
    line.kind = T_OTHER
    line.id_at = line.parent_at = line.usage_at = 0
    line.id_len = -1
    line.parent_len = -1
    line.message = 0
    line.role = R_OTHER
    line.task = 0
    line.usage_len = -1
    i = skip_ws(s, 0, n)
    if i >= n or s[i] != 123:
        return 0
    i = skip_ws(s, i + 1, n)
    if i < n and s[i] == 125:
        i += 1
    else:
        while True:
            if i >= n or s[i] != 34:
                return 0
            key_at = i
            escaped = 0
            i = scan_string(s, i, n, &escaped)
            if i < 0 or escaped:
                return 0
            key_end = i
            i = skip_ws(s, i, n)
            if i >= n or s[i] != 58:
                return 0
            i = skip_ws(s, i + 1, n)
            if i >= n:
                return 0
            value_at = i
            if key_is(s, key_at, key_end, "type", 4):
                if seen_type:
                    return 0
                seen_type = 1
                if s[i] == 34:
                    escaped = 0
                    i = scan_string(s, i, n, &escaped)
                    if i < 0 or escaped:
                        return 0
                    if key_is(s, value_at, i, "message", 7):
                        line.kind = T_MESSAGE
                    elif key_is(s, value_at, i, "model_usage", 11):
                        line.kind = T_MODEL_USAGE
                    else:
                        for k in range(stateful.count):
                            if key_is(s, value_at, i, <const char*>stateful.ptr[k], stateful.length[k]):
                                line.kind = T_STATE
                                break
                else:
                    i = scan_value(s, i, n, 1)
            elif key_is(s, key_at, key_end, "id", 2):
                if seen_id:
                    return 0
                seen_id = 1
                if s[i] == 34:
                    escaped = 0
                    i = scan_string(s, i, n, &escaped)
                    if i < 0 or escaped:
                        return 0  # its JSON would not be orjson's: decoded
                    line.id_at, line.id_len = value_at, i - value_at
                else:
                    i = scan_value(s, i, n, 1)
            elif key_is(s, key_at, key_end, "parentId", 8):
                if seen_parent:
                    return 0
                seen_parent = 1
                if s[i] == 34:
                    escaped = 0
                    i = scan_string(s, i, n, &escaped)
                    if i < 0 or escaped:
                        return 0
                    line.parent_at, line.parent_len = value_at, i - value_at
                else:
                    i = scan_value(s, i, n, 1)
            elif key_is(s, key_at, key_end, "message", 7):
                if seen_message:
                    return 0
                seen_message = 1
                if s[i] == 123:
                    line.message = 1
                    i = scan_message(s, i, n, line)
                else:
                    i = scan_value(s, i, n, 1)
            else:
                i = scan_value(s, i, n, 1)
            if i < 0:
                return 0
            i = skip_ws(s, i, n)
            if i >= n:
                return 0
            if s[i] == 44:
                i = skip_ws(s, i + 1, n)
            elif s[i] == 125:
                i += 1
                break
            else:
                return 0
    return skip_ws(s, i, n) == n


cdef carray.array _Q = array.array("q")
cdef carray.array _UI = array.array("I")
cdef carray.array _I = array.array("i")


cdef int _sort_u32(uint32_t* values, Py_ssize_t count) noexcept nogil:
    # Sort in place by four stable counting passes over the bytes, lowest first (a radix sort:
    # a fifth of qsort's time for the 100k hashes of a big session); -1 if out of memory.
    cdef uint32_t* other = <uint32_t*>malloc(sizeof(uint32_t) * (count if count > 0 else 1))
    cdef uint32_t* source = values
    cdef uint32_t* target = other
    cdef uint32_t* swap
    cdef Py_ssize_t counts[256]
    cdef Py_ssize_t i, total, here
    cdef int shift, k
    if not other:
        return -1
    for shift in range(0, 32, 8):
        memset(counts, 0, sizeof(counts))
        for i in range(count):
            counts[(source[i] >> shift) & 0xFF] += 1
        total = 0
        for k in range(256):
            here = counts[k]
            counts[k] = total
            total += here
        for i in range(count):
            k = (source[i] >> shift) & 0xFF
            target[counts[k]] = source[i]
            counts[k] += 1
        swap = source
        source = target
        target = swap
    free(other)  # (after an even number of passes the sorted values are back in ``values``)
    return 0


cdef class _Scan:
    """The id table of one scan (also what ``lookup`` answers for the hooks)."""

    cdef const unsigned char** key_ptr
    cdef Py_ssize_t* key_len
    cdef uint32_t* key_crc
    cdef int32_t* table  # position + 1 of each inserted id; 0: empty
    cdef Py_ssize_t mask
    cdef Py_ssize_t count
    cdef list keep  # bytes objects the key pointers point into (ids of decoded lines)
    cdef bytes data  # what the other key pointers point into

    def __cinit__(self, Py_ssize_t count, bytes data):
        cdef Py_ssize_t size = 16
        while size < 2 * count + 2:
            size <<= 1
        self.count = count
        self.mask = size - 1
        self.key_ptr = <const unsigned char**>malloc(sizeof(void*) * (count + 1))
        self.key_len = <Py_ssize_t*>malloc(sizeof(Py_ssize_t) * (count + 1))
        self.key_crc = <uint32_t*>malloc(sizeof(uint32_t) * (count + 1))
        self.table = <int32_t*>malloc(sizeof(int32_t) * size)
        if not self.key_ptr or not self.key_len or not self.key_crc or not self.table:
            raise MemoryError()
        memset(self.table, 0, sizeof(int32_t) * size)
        self.keep = []
        self.data = data

    def __dealloc__(self):
        free(self.key_ptr)
        free(self.key_len)
        free(self.key_crc)
        free(self.table)

    cdef inline Py_ssize_t find(self, const unsigned char* key, Py_ssize_t length, uint32_t crc) noexcept nogil:
        cdef Py_ssize_t slot = (crc * <uint32_t>2654435761) & self.mask
        cdef int32_t found
        while True:
            found = self.table[slot]
            if found == 0:
                return -1
            found -= 1
            if (self.key_crc[found] == crc and self.key_len[found] == length
                    and memcmp(self.key_ptr[found], key, length) == 0):
                return found
            slot = (slot + 1) & self.mask

    cdef inline void insert(self, Py_ssize_t position) noexcept nogil:
        cdef Py_ssize_t slot = (self.key_crc[position] * <uint32_t>2654435761) & self.mask
        while self.table[slot] != 0:
            slot = (slot + 1) & self.mask
        self.table[slot] = <int32_t>(position + 1)

    def lookup(self, entry_id):
        """The position of ``entry_id`` among the ids inserted so far, or -1."""
        if not isinstance(entry_id, str):
            return -1
        key = orjson.dumps(entry_id)
        cdef const unsigned char* ptr = <const unsigned char*>PyBytes_AS_STRING(key)
        cdef Py_ssize_t length = PyBytes_GET_SIZE(key)
        return self.find(ptr, length, crc32(ptr, length))


cdef int _classify(object entry, Line* line, list keep, const unsigned char** id_ptr,
                   const unsigned char** parent_ptr, object stateful) except -1:
    # The fields of a line orjson decoded, as the reference reads them (its keys' JSON in ``keep``).
    cdef object kind = entry.get("type")
    line.kind = T_OTHER
    line.id_len = -1
    line.parent_len = -1
    line.message = 0
    line.role = R_OTHER
    line.task = 0
    line.usage_len = -1
    if kind == "message":
        line.kind = T_MESSAGE
        message = entry.get("message")
        if isinstance(message, dict):
            line.message = 1
            role = message.get("role")
            if role == "assistant":
                line.role = R_ASSISTANT
                if "usage" in message:
                    line.usage_len = 0  # (the value is read from the entry)
            elif role == "toolResult":
                line.role = R_TOOL_RESULT
                line.task = message.get("toolName") == "task"
    elif kind == "model_usage":
        line.kind = T_MODEL_USAGE
    elif isinstance(kind, str) and kind in stateful:
        line.kind = T_STATE
    value = entry.get("id")
    if isinstance(value, str):
        key = orjson.dumps(value)
        keep.append(key)
        id_ptr[0] = <const unsigned char*>PyBytes_AS_STRING(key)
        line.id_at, line.id_len = 0, PyBytes_GET_SIZE(key)
    value = entry.get("parentId")
    if isinstance(value, str):
        key = orjson.dumps(value)
        keep.append(key)
        parent_ptr[0] = <const unsigned char*>PyBytes_AS_STRING(key)
        line.parent_at, line.parent_len = 0, PyBytes_GET_SIZE(key)
    return 0



# -- usage totals, added in C (UsageStatistics.add_usage, number for number) ----------------------

cdef struct Total:
    int is_float
    int64_t whole
    double real

cdef struct Number:
    int kind  # 0: not a number, 1: an integer, 2: a float
    int64_t whole
    double real

cdef struct Usage:
    Number strict[5]  # input, output, cacheRead, cacheWrite, totalTokens (kind 0: missing)
    int has_orchestration
    Number orchestration[3]  # input, output, cacheRead
    Number premium
    Number cost_total

cdef int64_t INT64_LIMIT = 9223372036854775807LL


cdef double EXACT_TENS[23]
for _k in range(23):
    EXACT_TENS[_k] = 10.0 ** _k


cdef inline int fast_float(const unsigned char* s, Py_ssize_t i, Py_ssize_t end, int negative, double* out) noexcept nogil:
    # Clinger's fast path: when the digits of s[i:end] (a checked JSON number, sign stripped) make
    # an integer below 2**53 and the decimal exponent is within 22 of it, both are exact doubles
    # and one IEEE multiplication or division rounds their product correctly, as strtod would
    # (a cost such as 0.0123 is 123 / 10**4). 0: not on the fast path (strtod decides).
    cdef uint64_t mantissa = 0
    cdef long exponent = 0, written = 0
    cdef int digits = 0, exponent_negative = 0, in_fraction = 0
    cdef double value
    while i < end and (48 <= s[i] <= 57 or s[i] == 46):  # the digits, then a fraction's
        if s[i] == 46:
            in_fraction = 1
        else:
            if digits > 0 or s[i] != 48:
                digits += 1
            if digits > 15:
                return 0
            mantissa = mantissa * 10 + (s[i] - 48)
            exponent -= in_fraction
        i += 1
    if i < end:  # an exponent part
        i += 1
        if s[i] == 43 or s[i] == 45:
            exponent_negative = s[i] == 45
            i += 1
        while i < end:
            written = written * 10 + (s[i] - 48)
            if written > 400:
                return 0
            i += 1
        exponent += -written if exponent_negative else written
    if exponent < -22 or exponent > 22:
        return 0
    value = <double>mantissa
    if exponent >= 0:
        value = value * EXACT_TENS[exponent]
    else:
        value = value / EXACT_TENS[-exponent]
    out[0] = -value if negative else value
    return 1


cdef Py_ssize_t read_number(const unsigned char* s, Py_ssize_t i, Py_ssize_t n, Number* out) noexcept nogil:
    # The number token at s[i] (already checked by scan_line); its end, or -1 (the caller falls
    # back to orjson: an integer of more than 18 digits, a token too long to copy).
    cdef Py_ssize_t start = i, digits = 0
    cdef int is_float = 0, negative = 0
    cdef char buffer[80]
    cdef int64_t whole = 0
    if s[i] == 45:
        negative = 1
        i += 1
    while i < n and 48 <= s[i] <= 57:
        whole = whole * 10 + (s[i] - 48) if digits < 18 else whole
        i += 1
        digits += 1
    if i < n and s[i] == 46:
        is_float = 1
        i += 1
        while i < n and 48 <= s[i] <= 57:
            i += 1
    if i < n and (s[i] == 101 or s[i] == 69):
        is_float = 1
        i += 1
        if i < n and (s[i] == 43 or s[i] == 45):
            i += 1
        while i < n and 48 <= s[i] <= 57:
            i += 1
    if digits == 0:
        return -1
    if is_float:
        out.kind = 2
        if fast_float(s, start + negative, i, negative, &out.real):
            return i
        if i - start >= 79:
            return -1
        memcpy(buffer, s + start, i - start)
        buffer[i - start] = 0
        out.real = strtod(buffer, NULL)
    else:
        if digits > 18:
            return -1
        out.kind = 1
        out.whole = -whole if negative else whole
    return i


cdef Py_ssize_t read_field(const unsigned char* s, Py_ssize_t i, Py_ssize_t n, Number* out) noexcept nogil:
    # A value: a number is read into ``out``, anything else skipped (kind 0).
    out.kind = 0
    if s[i] == 45 or 48 <= s[i] <= 57:
        return read_number(s, i, n, out)
    return scan_value(s, i, n, 3)


cdef int key_index(const unsigned char* s, Py_ssize_t at, Py_ssize_t end, int level) noexcept nogil:
    # Which tracked key s[at:end] (quotes included) is at this level of a usage; -1: none.
    if level == 0:
        if key_is(s, at, end, "input", 5): return 0
        if key_is(s, at, end, "output", 6): return 1
        if key_is(s, at, end, "cacheRead", 9): return 2
        if key_is(s, at, end, "cacheWrite", 10): return 3
        if key_is(s, at, end, "totalTokens", 11): return 4
        if key_is(s, at, end, "orchestration", 13): return 5
        if key_is(s, at, end, "premiumRequests", 15): return 6
        if key_is(s, at, end, "cost", 4): return 7
    elif level == 1:  # orchestration
        if key_is(s, at, end, "input", 5): return 0
        if key_is(s, at, end, "output", 6): return 1
        if key_is(s, at, end, "cacheRead", 9): return 2
    elif level == 2:  # cost
        if key_is(s, at, end, "total", 5): return 0
    return -1


cdef Py_ssize_t read_usage_object(const unsigned char* s, Py_ssize_t i, Py_ssize_t n, int level, Usage* usage) noexcept nogil:
    # The object at s[i] at ``level``; its end, or -1 (fall back to orjson).
    cdef int escaped = 0, which, seen = 0
    cdef Py_ssize_t key_at, key_end
    cdef Number ignored
    i = skip_ws(s, i + 1, n)
    if i < n and s[i] == 125:
        return i + 1
    while True:
        if i >= n or s[i] != 34:
            return -1
        key_at = i
        escaped = 0
        i = scan_string(s, i, n, &escaped)
        if i < 0 or escaped:
            return -1
        key_end = i
        i = skip_ws(s, i, n)
        if i >= n or s[i] != 58:
            return -1
        i = skip_ws(s, i + 1, n)
        if i >= n:
            return -1
        which = key_index(s, key_at, key_end, level)
        if which >= 0:
            if seen & (1 << which):
                return -1  # a duplicate key: orjson keeps the last one
            seen |= 1 << which
        if which < 0:
            i = scan_value(s, i, n, 3)
        elif level == 1:
            i = read_field(s, i, n, &usage.orchestration[which])
        elif level == 2:
            i = read_field(s, i, n, &usage.cost_total)
        elif which < 5:
            i = read_field(s, i, n, &usage.strict[which])
        elif which == 5:
            if s[i] == 123:
                usage.has_orchestration = 1
                i = read_usage_object(s, i, n, 1, usage)
            else:
                i = scan_value(s, i, n, 3)
        elif which == 6:
            i = read_field(s, i, n, &usage.premium)
        else:
            if s[i] == 123:
                i = read_usage_object(s, i, n, 2, usage)
            else:
                i = scan_value(s, i, n, 3)
        if i < 0:
            return -1
        i = skip_ws(s, i, n)
        if i >= n:
            return -1
        if s[i] == 44:
            i = skip_ws(s, i + 1, n)
        elif s[i] == 125:
            return i + 1
        else:
            return -1


cdef inline int add_number(Total* total, Number* value) noexcept nogil:
    # ``total += value`` as Python adds an int or a float; 0 on an integer overflow.
    if value.kind == 1:
        if total.is_float:
            total.real += <double>value.whole
        elif (value.whole > 0 and total.whole > INT64_LIMIT - value.whole) or (
            value.whole < 0 and total.whole < -INT64_LIMIT - value.whole
        ):
            return 0
        else:
            total.whole += value.whole
    elif value.kind == 2:
        if total.is_float:
            total.real += value.real
        else:
            total.real = <double>total.whole + value.real
            total.is_float = 1
    return 1


cdef inline int nonzero(Number* value) noexcept nogil:
    # ``_number(value) or 0`` adds something.
    return (value.kind == 1 and value.whole != 0) or (value.kind == 2 and value.real != 0.0)


_TOTALS = (
    "input", "output", "cacheRead", "cacheWrite", "totalTokens",
    "orchestrationInput", "orchestrationOutput", "orchestrationCacheRead", "premiumRequests", "cost",
)
_STRICT = ("input", "output", "cacheRead", "cacheWrite", "totalTokens")


cdef class UsageSpans:
    """The usage values of the scanned assistant messages, left in the file's bytes: indexing
    decodes one (orjson), ``add_to`` adds a run of them to a ``UsageStatistics`` in C, exactly as
    its ``add_usage`` of each decoded value would (anything else is handed to ``add_usage``)."""

    cdef bytes data
    cdef carray.array starts
    cdef carray.array lengths
    cdef dict decoded

    def __cinit__(self, bytes data, carray.array starts, carray.array lengths, dict decoded):
        self.data, self.starts, self.lengths, self.decoded = data, starts, lengths, decoded

    def __len__(self):
        return len(self.lengths)

    def __getitem__(self, Py_ssize_t index):
        if index < 0 or index >= len(self.lengths):
            raise IndexError(index)
        if self.lengths.data.as_longlongs[index] < 0:
            return self.decoded[index]
        at = self.starts.data.as_longlongs[index]
        return orjson.loads(self.data[at : at + self.lengths.data.as_longlongs[index]])

    def add_to(self, stats, Py_ssize_t begin, Py_ssize_t end):
        """``stats.add_usage`` of the values ``begin`` to ``end``, in order."""
        cdef Total totals[10]
        cdef Total trial[10]
        cdef Usage usage
        cdef Py_ssize_t index, at, length, k
        cdef const unsigned char* s = <const unsigned char*>PyBytes_AS_STRING(self.data)
        cdef int ok, missing
        if not self._load(stats, totals):
            for index in range(begin, end):
                stats.add_usage(self[index])
            return
        for index in range(begin, end):
            length = self.lengths.data.as_longlongs[index]
            at = self.starts.data.as_longlongs[index]
            ok = 0
            if length >= 0:
                if s[at] != 123:
                    continue  # not an object: add_usage adds nothing
                memset(&usage, 0, sizeof(Usage))
                if read_usage_object(s + at, 0, length, 0, &usage) == length:
                    memcpy(trial, totals, sizeof(totals))
                    ok = 1
                    missing = 0
                    for k in range(5):
                        if usage.strict[k].kind == 0:
                            missing |= 1 << k
                        elif not add_number(&trial[k], &usage.strict[k]):
                            ok = 0
                    if usage.has_orchestration:
                        for k in range(3):
                            if nonzero(&usage.orchestration[k]) and not add_number(&trial[5 + k], &usage.orchestration[k]):
                                ok = 0
                    if nonzero(&usage.premium) and not add_number(&trial[8], &usage.premium):
                        ok = 0
                    if nonzero(&usage.cost_total) and not add_number(&trial[9], &usage.cost_total):
                        ok = 0
                    if ok:
                        memcpy(totals, trial, sizeof(totals))
                        if missing:
                            for k in range(5):
                                if missing & (1 << k):
                                    stats._missing(_STRICT[k])
            if not ok:  # decoded and added by UsageStatistics itself
                self._store(stats, totals)
                stats.add_usage(self[index])
                if not self._load(stats, totals):
                    for k in range(index + 1, end):
                        stats.add_usage(self[k])
                    return
        self._store(stats, totals)

    cdef int _load(self, stats, Total* totals) except -1:
        cdef int k
        for k in range(10):
            value = getattr(stats, _TOTALS[k])
            if type(value) is float:
                totals[k].is_float, totals[k].real = 1, value
            elif type(value) is int and -INT64_LIMIT <= value <= INT64_LIMIT:
                totals[k].is_float, totals[k].whole = 0, value
            else:
                return 0
        return 1

    cdef int _store(self, stats, Total* totals) except -1:
        cdef int k
        for k in range(10):
            setattr(stats, _TOTALS[k], totals[k].real if totals[k].is_float else totals[k].whole)
        return 0


def scan(bytes data, Py_ssize_t start, Py_ssize_t end, object hooks, object stateful):
    """Scan the lines of ``data[start:end]``; the fields of ``_scanner_py.Scanned``, as a tuple."""
    global u_escape_seen
    cdef const unsigned char* s = <const unsigned char*>PyBytes_AS_STRING(data)
    cdef Py_ssize_t size = PyBytes_GET_SIZE(data)
    cdef Py_ssize_t count = 0, at, line_end, length, position, parent, i
    cdef const unsigned char* found
    cdef Line line
    cdef Names names
    cdef int readable, has_assistant = 0
    cdef long number = 0, default = -1, after
    cdef const unsigned char* id_ptr
    cdef const unsigned char* parent_ptr
    cdef const unsigned char* previous_ptr = NULL
    cdef Py_ssize_t previous_len = -1
    cdef uint32_t crc
    cdef unsigned char* stable = NULL
    cdef Py_ssize_t stable_size = 0
    cdef unsigned char* blob
    cdef Py_ssize_t blob_size = 0, blob_at = 0
    if start < 0 or end > size or start > end:
        raise ValueError("a scan within the data")
    if start < end and s[end - 1] != 10:
        raise ValueError("a scan ends just after a newline")
    at = start
    while at < end:
        found = <const unsigned char*>memchr(s + at, 10, end - at)
        count += 1
        at = (found - s) + 1
    if count >= 0x7FFFFFFFLL:
        raise OverflowError("too many lines for the index")
    state = _Scan(count, data)
    stateful_names = [name.encode() for name in stateful if isinstance(name, str)]
    names.count = len(stateful_names)
    names.ptr = <const unsigned char**>malloc(sizeof(void*) * (names.count + 1))
    names.length = <Py_ssize_t*>malloc(sizeof(Py_ssize_t) * (names.count + 1))
    for i in range(names.count):
        names.ptr[i] = <const unsigned char*>PyBytes_AS_STRING(stateful_names[i])
        names.length[i] = PyBytes_GET_SIZE(stateful_names[i])
    cdef carray.array offsets = carray.clone(_Q, count, False)
    cdef carray.array lengths = carray.clone(_UI, count, False)
    cdef carray.array parents = carray.clone(_I, count, False)
    cdef carray.array state_ids = carray.clone(_UI, count, False)
    cdef carray.array defaults = carray.clone(_I, count, False)
    cdef carray.array id_ends = carray.clone(_UI, count, False)
    cdef carray.array id_hashes = carray.clone(_UI, count, False)
    cdef carray.array usage_positions = array.array("i")
    cdef Py_ssize_t usages = 0
    cdef carray.array escape_lines = array.array("i")
    cdef Py_ssize_t escapes = 0
    cdef int has_escape
    cdef bytes raw
    cdef list keep = state.keep
    cdef dict special = {}
    cdef dict decoded_usage = {}  # index in usage_positions -> value, for decoded lines
    cdef carray.array span_starts = array.array("q")
    cdef carray.array span_lengths = array.array("q")
    cdef set dangling = set()
    cdef object scan_state = hooks.scan_state
    cdef object scan_assistant = hooks.scan_assistant
    cdef object lookup = state.lookup
    cdef object entry
    cdef Py_ssize_t id_len, parent_len
    blob_size = 64 + 16 * count
    blob = <unsigned char*>malloc(blob_size)
    if not blob or not names.ptr or not names.length:
        free(blob)
        free(names.ptr)
        free(names.length)
        raise MemoryError()
    try:
        at = start
        for position in range(count):
            found = <const unsigned char*>memchr(s + at, 10, end - at)
            line_end = found - s
            length = line_end - at
            if length > 0xFFFFFFFFU:
                raise OverflowError("a line over 4 GB")
            offsets.data.as_longlongs[position] = at
            lengths.data.as_uints[position] = <unsigned int>length
            entry = None
            u_escape_seen = 0
            readable = scan_line(s + at, length, &line, &names)
            if readable:
                has_escape = u_escape_seen
                id_ptr = s + at + line.id_at
                parent_ptr = s + at + line.parent_at
            else:
                raw = data[at:line_end]
                has_escape = b"\\u" in raw  # (the scan stopped early: the bytes themselves)
                entry = orjson.loads(raw)
                if type(entry) is not dict:
                    hooks.scan_irregular("a line that is not an object")
                _classify(entry, &line, keep, &id_ptr, &parent_ptr, stateful)
            id_len, parent_len = line.id_len, line.parent_len
            if id_len >= 0:
                crc = crc32(id_ptr, id_len)
                if state.find(id_ptr, id_len, crc) >= 0 or (
                    dangling and PyBytes_FromStringAndSize(<const char*>id_ptr, id_len) in dangling
                ):
                    hooks.scan_irregular("duplicate id or a parent named before its entry")
            else:
                crc = 0
            if (previous_len >= 0 and parent_len == previous_len
                    and memcmp(parent_ptr, previous_ptr, parent_len) == 0):
                parent = position - 1
            else:
                parent = -1
                if parent_len > 2 and not (parent_len == id_len and memcmp(parent_ptr, id_ptr, id_len) == 0):
                    parent = state.find(parent_ptr, parent_len, crc32(parent_ptr, parent_len))
                    if parent < 0:
                        dangling.add(PyBytes_FromStringAndSize(<const char*>parent_ptr, parent_len))
                if parent >= 0:
                    number = state_ids.data.as_uints[parent]
                    default = defaults.data.as_ints[parent]
                else:
                    number, default = 0, -1
            if line.kind == T_MESSAGE:
                if line.message:
                    if line.role == R_ASSISTANT:
                        has_assistant = 1
                        default = position
                        if number >= stable_size or not stable[number]:
                            after = scan_assistant(number, position)
                            if after == number:
                                if number >= stable_size:
                                    i = stable_size
                                    stable_size = 2 * number + 64
                                    stable = <unsigned char*>realloc(stable, stable_size)
                                    if not stable:
                                        raise MemoryError()
                                    memset(stable + i, 0, stable_size - i)
                                stable[number] = 1
                            number = after
                        if line.usage_len >= 0:
                            carray.resize_smart(usage_positions, usages + 1)
                            usage_positions.data.as_ints[usages] = <int>position
                            usages += 1
                            carray.resize_smart(span_starts, usages)
                            carray.resize_smart(span_lengths, usages)
                            if entry is None:
                                span_starts.data.as_longlongs[usages - 1] = at + line.usage_at
                                span_lengths.data.as_longlongs[usages - 1] = line.usage_len
                            else:
                                decoded_usage[usages - 1] = entry["message"]["usage"]
                                span_starts.data.as_longlongs[usages - 1] = 0
                                span_lengths.data.as_longlongs[usages - 1] = -1
                    elif line.role == R_TOOL_RESULT and line.task:
                        special[position] = entry if entry is not None else orjson.loads(data[at:line_end])
            elif line.kind == T_MODEL_USAGE:
                special[position] = entry if entry is not None else orjson.loads(data[at:line_end])
            elif line.kind == T_STATE:
                if entry is None:
                    entry = orjson.loads(data[at:line_end])
                special[position] = entry
                number, default = scan_state(position, entry, number, default, lookup)
            if id_len >= 0:
                state.key_ptr[position] = id_ptr
                state.key_len[position] = id_len
                state.key_crc[position] = crc
                state.insert(position)
                id_hashes.data.as_uints[position] = crc
            else:
                state.key_ptr[position] = <const unsigned char*>b"null"
                state.key_len[position] = 4
                state.key_crc[position] = 0
                id_hashes.data.as_uints[position] = crc32(<const unsigned char*>b"null", 4)
            if id_len > 2:  # ``entry_id or None``: an empty id is no one's parent by adjacency
                previous_ptr, previous_len = id_ptr, id_len
            else:
                previous_ptr, previous_len = NULL, -1
            if has_escape:
                carray.resize_smart(escape_lines, escapes + 1)
                escape_lines.data.as_ints[escapes] = <int>position
                escapes += 1
            parents.data.as_ints[position] = <int>parent
            state_ids.data.as_uints[position] = <unsigned int>number
            defaults.data.as_ints[position] = <int>default
            # The id column: each id's JSON, comma-separated.
            length = state.key_len[position]
            if blob_at + length + 2 > blob_size:
                blob_size = 2 * blob_size + length + 2
                blob = <unsigned char*>realloc(blob, blob_size)
                if not blob:
                    raise MemoryError()
            if position:
                blob[blob_at] = 44
                blob_at += 1
            memcpy(blob + blob_at, state.key_ptr[position], length)
            blob_at += length
            id_ends.data.as_uints[position] = <unsigned int>blob_at
            at = line_end + 1
        if _sort_u32(id_hashes.data.as_uints, count) < 0:
            raise MemoryError()
        id_blob = PyBytes_FromStringAndSize(<const char*>blob, blob_at)
        usage_values = UsageSpans(data, span_starts, span_lengths, decoded_usage)
    finally:
        free(blob)
        free(stable)
        free(names.ptr)
        free(names.length)
    return (
        offsets,
        lengths,
        parents,
        state_ids,
        defaults,
        id_blob,
        id_ends,
        id_hashes,
        {orjson.loads(key) for key in dangling},
        bool(has_assistant),
        special,
        usage_positions,
        usage_values,
        escape_lines,
    )


def line_readable(bytes line, object stateful=()):
    """Whether the scanner reads ``line`` itself (``False``: it hands it to orjson). For tests."""
    cdef Line info
    cdef Names names
    names.count = 0
    return bool(scan_line(<const unsigned char*>PyBytes_AS_STRING(line), PyBytes_GET_SIZE(line), &info, &names))


def find(bytes data, bytes needle, Py_ssize_t start=0, end=None):
    """``data.find(needle, start, end)``, through the C library's ``memmem``."""
    cdef Py_ssize_t size = PyBytes_GET_SIZE(data)
    cdef Py_ssize_t stop = size if end is None else end
    cdef Py_ssize_t length = PyBytes_GET_SIZE(needle)
    cdef const char* base = PyBytes_AS_STRING(data)
    cdef const char* wanted = PyBytes_AS_STRING(needle)
    cdef const char* hit
    # Slice rules, as bytes.find applies them.
    if start < 0:
        start = max(start + size, 0)
    if stop < 0:
        stop = max(stop + size, 0)
    stop = min(stop, size)
    if start > size or stop - start < length:
        return -1
    with nogil:
        hit = <const char*>omp_memmem(base + start, <size_t>(stop - start), wanted, <size_t>length)
    return -1 if hit == NULL else hit - base
