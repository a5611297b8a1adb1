/* A memory snapshot's pickle read straight into columns (core/snapshot/native.py).
 *
 * A small pickle machine for the opcodes pickle.dump writes, protocols 2 to 5, for
 * dicts, lists, tuples, strings, bytes, ints, floats, booleans and None (the opcode
 * table is CPython's Lib/pickletools.py). Every opcode that could name or call
 * anything -- GLOBAL, STACK_GLOBAL, REDUCE, BUILD, INST, OBJ, NEWOBJ(_EX), PERSID,
 * BINPERSID, EXT1/2/4 -- is refused (Refused); an opcode that builds only harmless
 * values but is not written by pickle.dump for a snapshot (protocol 0's text forms,
 * sets, bytearrays, out-of-band buffers) is left to the pure-Python reader
 * (Unsupported).
 *
 * The trace entries of ``device_traces`` (``TraceEntry`` in torch.cuda.memory's
 * docs) are never kept: each batch of entries is turned into rows of growing columns
 * when it is appended to its device's list, the entry dicts are then dropped and their
 * memo slots given up (an entry referred to again is Unsupported), and each entry's
 * frames list is interned to a stack id (a cache by the identities of its first and
 * last frames and its length; a miss asks Python's interning, which gives the stack's
 * canonical frames) and its memo slot replaced by those canonical frames, so a later
 * reference to the same traceback finds them. Everything else is built as objects.
 *
 * Bounds: a length is checked against what is left of the file before anything is
 * allocated for it (Truncated); a memo index may only be one already used or the next
 * one (pickle.dump numbers them in order), so a crafted index cannot grow the memo.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

static PyObject *Refused, *Unsupported, *Bad, *NotSnapshot, *Truncated, *Cancelled;
static PyObject *CONSUMED; /* what an entry's memo slot holds once it is a row */
static PyObject *K_ACTION, *K_ADDR, *K_SIZE, *K_STREAM, *K_TIME, *K_FRAMES, *K_POOL, *K_DT;

#define CHUNK (1 << 20)
#define REPORT (1 << 20)

typedef struct {
    PyObject *time, *action, *addr, *size, *stream, *stack; /* bytearrays */
    Py_ssize_t n, cap;
    int timestamps;
    PyObject *list; /* borrowed: the device's list in the pickle */
} Cols;

typedef struct {
    int fd;
    long long size, offset; /* file size; file offset of buf[end] */
    char *buf;
    Py_ssize_t cap, pos, end;
    long long next_report;
    PyObject *progress;
    PyObject **st;
    Py_ssize_t st_len, st_cap;
    Py_ssize_t *marks;
    Py_ssize_t mk_len, mk_cap;
    PyObject **memo;
    Py_ssize_t memo_len, memo_cap;
    Py_ssize_t *log; /* memo indices put since the last batch of entries */
    Py_ssize_t log_len, log_cap;
    PyObject *dt;  /* borrowed: the device_traces list */
    Cols *cols;
    Py_ssize_t n_cols, n_traces; /* capacity, count */
    int in_trace, saw_consumed;
    PyObject *actions, *intern, *new_action, *odd, *cache, *swap, *strings;
} P;

static int grow(void **p, Py_ssize_t *cap, Py_ssize_t want, size_t item) {
    if (want <= *cap) return 0;
    Py_ssize_t c = *cap ? *cap : 64;
    while (c < want) c *= 2;
    void *n = PyMem_Realloc(*p, (size_t)c * item);
    if (!n) { PyErr_NoMemory(); return -1; }
    *p = n; *cap = c;
    return 0;
}

/* ---- reading ---- */

static int fill(P *p, Py_ssize_t need) {
    Py_ssize_t have = p->end - p->pos;
    if (need > have && need - have > p->size - p->offset) {
        PyErr_SetString(Truncated, "the pickle ends before its last object");
        return -1;
    }
    if (p->pos) {
        memmove(p->buf, p->buf + p->pos, (size_t)have);
        p->end = have; p->pos = 0;
    }
    if (need > p->cap) {
        char *n = PyMem_Realloc(p->buf, (size_t)need);
        if (!n) { PyErr_NoMemory(); return -1; }
        p->buf = n; p->cap = need;
    }
    while (p->end < need) {
        ssize_t got;
        Py_BEGIN_ALLOW_THREADS
        got = read(p->fd, p->buf + p->end, (size_t)(p->cap - p->end));
        Py_END_ALLOW_THREADS
        if (got < 0) {
            if (errno == EINTR) { if (PyErr_CheckSignals()) return -1; continue; }
            PyErr_SetFromErrno(PyExc_OSError);
            return -1;
        }
        if (got == 0) { PyErr_SetString(Truncated, "the pickle ends before its last object"); return -1; }
        p->end += got; p->offset += got;
    }
    if (p->offset >= p->next_report) {
        p->next_report = p->offset + REPORT;
        if (p->progress != Py_None) {
            PyObject *r = PyObject_CallFunction(p->progress, "LL", p->offset, p->size);
            if (!r) return -1;
            int stop = PyObject_IsTrue(r);
            Py_DECREF(r);
            if (stop) { PyErr_SetNone(Cancelled); return -1; }
        }
    }
    return 0;
}

#define NEED(n) do { if (p->end - p->pos < (Py_ssize_t)(n) && fill(p, (n)) < 0) goto error; } while (0)

static inline uint64_t le(const unsigned char *s, int n) {
    uint64_t v = 0;
    for (int i = n - 1; i >= 0; i--) v = (v << 8) | s[i];
    return v;
}

/* ---- the stack ---- */

static inline int push(P *p, PyObject *o) { /* steals o */
    if (!o) return -1;
    if (p->st_len == p->st_cap && grow((void **)&p->st, &p->st_cap, p->st_len + 1, sizeof(PyObject *)) < 0) {
        Py_DECREF(o);
        return -1;
    }
    p->st[p->st_len++] = o;
    return 0;
}

static Py_ssize_t marker(P *p) {
    if (!p->mk_len) { PyErr_SetString(Bad, "a MARK is missing"); return -1; }
    Py_ssize_t m = p->marks[--p->mk_len];
    if (m > p->st_len) { PyErr_SetString(Bad, "a MARK is past the stack"); return -1; }
    return m;
}

static int floor_ok(P *p, Py_ssize_t n) {
    Py_ssize_t base = p->mk_len ? p->marks[p->mk_len - 1] : 0;
    if (p->st_len - base < n) { PyErr_SetString(Bad, "the stack is empty where an object is needed"); return 0; }
    return 1;
}

/* ---- columns ---- */

static int col_reserve(Cols *c, Py_ssize_t want) {
    if (want <= c->cap) return 0;
    Py_ssize_t cap = c->cap ? c->cap : 4096;
    while (cap < want) cap += cap / 2 + 4096;
    PyObject *cols[6] = {c->time, c->action, c->addr, c->size, c->stream, c->stack};
    size_t width[6] = {8, 2, 8, 8, 8, 4};
    for (int i = 0; i < 6; i++)
        if (PyByteArray_Resize(cols[i], cap * (Py_ssize_t)width[i]) < 0) return -1;
    c->cap = cap;
    return 0;
}

static int as_i64(PyObject *v, int64_t *out, const char *what) {
    if (PyLong_CheckExact(v) || PyBool_Check(v)) {
        int overflow = 0;
        long long x = PyLong_AsLongLongAndOverflow(v, &overflow);
        if (overflow || (x == -1 && PyErr_Occurred())) {
            PyErr_Clear();
            PyErr_Format(NotSnapshot, "a trace entry's %s is not a 64-bit whole number", what);
            return -1;
        }
        *out = x;
        return 0;
    }
    PyErr_Format(NotSnapshot, "a trace entry's %s is not a 64-bit whole number", what);
    return -1;
}

/* The stack id of an entry's frames and their canonical form (a new reference, or NULL
 * where the frames are none). */
static int32_t stack_of(P *p, PyObject *frames, PyObject **canon) {
    *canon = NULL;
    if (!frames || frames == Py_None) return 0;
    Py_ssize_t n = -1;
    if (PyList_CheckExact(frames)) n = PyList_GET_SIZE(frames);
    else if (PyTuple_CheckExact(frames)) n = PyTuple_GET_SIZE(frames);
    if (n == 0) return 0;
    PyObject **items = NULL;
    PyObject *key = NULL;
    if (n > 0) {
        items = PyList_CheckExact(frames) ? ((PyListObject *)frames)->ob_item : ((PyTupleObject *)frames)->ob_item;
        uint64_t h = (uint64_t)(uintptr_t)items[0] * 0x9E3779B97F4A7C15ull ^ (uint64_t)(uintptr_t)items[n - 1] ^
                     ((uint64_t)n << 48);
        key = PyLong_FromUnsignedLongLong(h);
        if (!key) return -1;
        PyObject *hit = PyDict_GetItemWithError(p->cache, key);
        if (hit) {
            PyObject *c = PyTuple_GET_ITEM(hit, 1);
            if (PyTuple_GET_SIZE(c) == n) {
                int same = 1;
                for (Py_ssize_t i = 0; i < n && same; i++) same = PyTuple_GET_ITEM(c, i) == items[i];
                if (same) {
                    Py_DECREF(key);
                    *canon = c;
                    Py_INCREF(c);
                    return (int32_t)PyLong_AsLong(PyTuple_GET_ITEM(hit, 0));
                }
            }
        } else if (PyErr_Occurred()) {
            Py_DECREF(key);
            return -1;
        }
    }
    PyObject *r = PyObject_CallOneArg(p->intern, frames);
    if (!r) { Py_XDECREF(key); return -1; }
    if (!PyTuple_Check(r) || PyTuple_GET_SIZE(r) != 2 || !PyTuple_Check(PyTuple_GET_ITEM(r, 1))) {
        Py_DECREF(r); Py_XDECREF(key);
        PyErr_SetString(PyExc_TypeError, "intern returned something else than (id, frames)");
        return -1;
    }
    long id = PyLong_AsLong(PyTuple_GET_ITEM(r, 0));
    PyObject *c = PyTuple_GET_ITEM(r, 1);
    if (key && PyTuple_GET_SIZE(c) == n) {
        int same = 1;
        for (Py_ssize_t i = 0; i < n && same; i++) same = PyTuple_GET_ITEM(c, i) == items[i];
        if (same && PyDict_SetItem(p->cache, key, r) < 0) { Py_DECREF(r); Py_DECREF(key); return -1; }
    }
    Py_XDECREF(key);
    *canon = c;
    Py_INCREF(c);
    Py_DECREF(r);
    return (int32_t)id;
}

static int swap_later(P *p, PyObject *from, PyObject *to) {
    PyObject *k = PyLong_FromVoidPtr(from);
    if (!k) return -1;
    int r = PyDict_SetItem(p->swap, k, to);
    Py_DECREF(k);
    return r;
}

static int keep(PyObject *k, PyObject *v) {
    if (v == Py_None) return 0;
    if (PyUnicode_CheckExact(v)) return PyUnicode_GET_LENGTH(v) > 0;
    if (PyList_CheckExact(v) || PyTuple_CheckExact(v) || PyDict_CheckExact(v)) {
        Py_ssize_t n = PyObject_Length(v);
        if (n == 0) return 0;
        if (n == 2 && !PyDict_CheckExact(v) && PyUnicode_CheckExact(k) &&
            PyUnicode_CompareWithASCIIString(k, "pool_id") == 0) {
            PyObject *a = PySequence_Fast_GET_ITEM(v, 0), *b = PySequence_Fast_GET_ITEM(v, 1);
            int of_a = 0, of_b = 0;
            if (PyLong_CheckExact(a) && PyLong_CheckExact(b) && PyLong_AsLongAndOverflow(a, &of_a) == 0 && !of_a &&
                PyLong_AsLongAndOverflow(b, &of_b) == 0 && !of_b)
                return 0;
        }
    }
    return 1;
}

static int row(P *p, Py_ssize_t dev, PyObject *e) {
    Cols *c = &p->cols[dev];
    if (e == CONSUMED) { PyErr_SetString(Unsupported, "a trace entry is referred to twice"); return -1; }
    if (!PyDict_CheckExact(e)) {
        PyErr_Format(NotSnapshot, "trace entry %zd is a %.80s, not a dict", c->n, Py_TYPE(e)->tp_name);
        return -1;
    }
    if (col_reserve(c, c->n + 1) < 0) return -1;
    Py_ssize_t i = c->n;
    Py_ssize_t found = 0;
    PyObject *v;
    int64_t x;
    /* action */
    int16_t code;
    v = PyDict_GetItemWithError(e, K_ACTION);
    if (!v && PyErr_Occurred()) return -1;
    found += v != NULL;
    PyObject *hit = v && PyUnicode_CheckExact(v) ? PyDict_GetItemWithError(p->actions, v) : NULL;
    if (hit) code = (int16_t)PyLong_AsLong(hit);
    else {
        if (PyErr_Occurred()) return -1;
        PyObject *r = PyObject_CallOneArg(p->new_action, v ? v : Py_None);
        if (!r) return -1;
        code = (int16_t)PyLong_AsLong(r);
        Py_DECREF(r);
    }
    ((int16_t *)PyByteArray_AS_STRING(c->action))[i] = code;
    PyObject *keys[4] = {K_ADDR, K_SIZE, K_STREAM, K_TIME};
    PyObject *outs[4] = {c->addr, c->size, c->stream, c->time};
    const char *names[4] = {"addr", "size", "stream", "time_us"};
    for (int k = 0; k < 4; k++) {
        v = PyDict_GetItemWithError(e, keys[k]);
        if (!v && PyErr_Occurred()) return -1;
        found += v != NULL;
        if (!v || (k == 3 && v == Py_None)) {
            x = k == 3 ? (int64_t)i : 0;
            if (k == 3) c->timestamps = 0;
        } else if (as_i64(v, &x, names[k]) < 0) return -1;
        ((int64_t *)PyByteArray_AS_STRING(outs[k]))[i] = x;
    }
    v = PyDict_GetItemWithError(e, K_FRAMES);
    if (!v && PyErr_Occurred()) return -1;
    found += v != NULL;
    PyObject *canon;
    int32_t sid = stack_of(p, v, &canon);
    if (sid < 0 || PyErr_Occurred()) { Py_XDECREF(canon); return -1; }
    ((int32_t *)PyByteArray_AS_STRING(c->stack))[i] = sid;
    if (canon) {
        if (v != canon && (PyList_CheckExact(v) || PyTuple_CheckExact(v))) {
            if (swap_later(p, v, canon) < 0) { Py_DECREF(canon); return -1; }
            PyObject **a = PySequence_Fast_ITEMS(v);
            for (Py_ssize_t j = 0; j < PyTuple_GET_SIZE(canon); j++)
                if (a[j] != PyTuple_GET_ITEM(canon, j) && swap_later(p, a[j], PyTuple_GET_ITEM(canon, j)) < 0) {
                    Py_DECREF(canon);
                    return -1;
                }
        }
        Py_DECREF(canon);
    }
    if (PyDict_GET_SIZE(e) > found) { /* fields beyond the columns: kept by Python where not default */
        Py_ssize_t pos = 0;
        PyObject *k2;
        while (PyDict_Next(e, &pos, &k2, &v)) {
            if (k2 == K_ACTION || k2 == K_ADDR || k2 == K_SIZE || k2 == K_STREAM || k2 == K_TIME || k2 == K_FRAMES)
                continue;
            if (PyUnicode_CheckExact(k2)) {
                int col = 0;
                PyObject *ks[6] = {K_ACTION, K_ADDR, K_SIZE, K_STREAM, K_TIME, K_FRAMES};
                for (int j = 0; j < 6 && !col; j++) col = PyUnicode_Compare(k2, ks[j]) == 0;
                if (col) continue;
            }
            if (!keep(k2, v)) continue;
            PyObject *r = PyObject_CallFunction(p->odd, "nnOO", dev, i, k2, v);
            if (!r) return -1;
            Py_DECREF(r);
        }
    }
    if (swap_later(p, e, CONSUMED) < 0) return -1;
    c->n = i + 1;
    return 0;
}

/* After a batch of entries: the memo slots of what became rows given up. */
static int release(P *p) {
    for (Py_ssize_t j = 0; j < p->log_len; j++) {
        Py_ssize_t idx = p->log[j];
        if (idx >= p->memo_len) continue;
        PyObject *o = p->memo[idx];
        if (o && PyUnicode_CheckExact(o)) {
            /* a string met again as a new object (not referred back to): the memo keeps
             * one of each text, not one per entry */
            PyObject *same = PyDict_SetDefault(p->strings, o, o);
            if (!same) return -1;
            if (same != o) {
                Py_INCREF(same);
                p->memo[idx] = same;
                Py_DECREF(o);
            }
            continue;
        }
        if (!o || !(PyDict_CheckExact(o) || PyList_CheckExact(o))) continue;
        PyObject *k = PyLong_FromVoidPtr(o);
        if (!k) return -1;
        PyObject *to = PyDict_GetItemWithError(p->swap, k);
        Py_DECREF(k);
        if (to) {
            Py_INCREF(to);
            p->memo[idx] = to;
            Py_DECREF(o);
        } else if (PyErr_Occurred()) return -1;
    }
    p->log_len = 0;
    PyDict_Clear(p->swap);
    return 0;
}

static Py_ssize_t trace_of(P *p, PyObject *list) {
    for (Py_ssize_t d = p->n_traces - 1; d >= 0; d--)
        if (p->cols[d].list == list) return d;
    return -1;
}

/* APPEND/APPENDS of st[from:] to st[from-1] */
static int appends(P *p, Py_ssize_t from) {
    if (from < 1) { PyErr_SetString(Bad, "APPENDS with no list"); return -1; }
    PyObject *target = p->st[from - 1];
    Py_ssize_t dev = p->in_trace ? trace_of(p, target) : -1;
    if (dev >= 0) {
        for (Py_ssize_t j = from; j < p->st_len; j++)
            if (row(p, dev, p->st[j]) < 0) return -1;
        if (release(p) < 0) return -1;
        for (Py_ssize_t j = from; j < p->st_len; j++) Py_DECREF(p->st[j]);
        p->st_len = from;
        return 0;
    }
    if (target == p->dt && p->dt) {
        for (Py_ssize_t j = from; j < p->st_len; j++) {
            Py_ssize_t d = trace_of(p, p->st[j]);
            if (d != PyList_GET_SIZE(target) + (j - from)) {
                PyErr_SetString(Unsupported, "device_traces holds something else than its lists in order");
                return -1;
            }
        }
        p->in_trace = 0;
    }
    if (!PyList_CheckExact(target)) {
        PyErr_Format(Bad, "APPENDS to a %.80s", Py_TYPE(target)->tp_name);
        return -1;
    }
    for (Py_ssize_t j = from; j < p->st_len; j++) {
        if (p->st[j] == CONSUMED) p->saw_consumed = 1;
        if (PyList_Append(target, p->st[j]) < 0) return -1;
        Py_DECREF(p->st[j]);
        p->st[j] = NULL;
    }
    p->st_len = from;
    return 0;
}

static int setitems(P *p, Py_ssize_t from) {
    if (from < 1 || (p->st_len - from) % 2) { PyErr_SetString(Bad, "SETITEMS with an odd number of items"); return -1; }
    PyObject *d = p->st[from - 1];
    if (!PyDict_CheckExact(d)) { PyErr_Format(Bad, "SETITEMS to a %.80s", Py_TYPE(d)->tp_name); return -1; }
    for (Py_ssize_t j = from; j < p->st_len; j += 2) {
        if (p->st[j] == CONSUMED || p->st[j + 1] == CONSUMED) p->saw_consumed = 1;
        if (PyDict_SetItem(d, p->st[j], p->st[j + 1]) < 0) return -1;
    }
    for (Py_ssize_t j = from; j < p->st_len; j++) Py_DECREF(p->st[j]);
    p->st_len = from;
    return 0;
}

static int new_list(P *p) {
    PyObject *l = PyList_New(0);
    if (!l) return -1;
    /* the device_traces list: the root dict's value for that key */
    if (!p->dt && p->st_len >= 2 && (p->st_len % 2) == 0 && PyDict_CheckExact(p->st[0]) &&
        PyUnicode_CheckExact(p->st[p->st_len - 1]) && PyUnicode_Compare(p->st[p->st_len - 1], K_DT) == 0 &&
        p->mk_len <= 1) {
        p->dt = l;
    } else if (p->dt && p->st_len >= 1) {
        PyObject *top = p->st[p->st_len - 1];
        int after_mark = p->mk_len && p->marks[p->mk_len - 1] == p->st_len;
        if (top == p->dt || (!after_mark && trace_of(p, top) >= 0)) {
            if (grow((void **)&p->cols, &p->n_cols, p->n_traces + 1, sizeof(Cols)) < 0) { Py_DECREF(l); return -1; }
            Cols *c = &p->cols[p->n_traces];
            memset(c, 0, sizeof(Cols));
            c->timestamps = 1;
            c->list = l;
            PyObject **cs[6] = {&c->time, &c->action, &c->addr, &c->size, &c->stream, &c->stack};
            for (int i = 0; i < 6; i++)
                if (!(*cs[i] = PyByteArray_FromStringAndSize(NULL, 0))) { Py_DECREF(l); return -1; }
            p->n_traces++;
            p->in_trace = 1;
        }
    }
    return push(p, l);
}

static int memo_put(P *p, Py_ssize_t idx) {
    if (!p->st_len || (p->mk_len && p->marks[p->mk_len - 1] == p->st_len)) {
        PyErr_SetString(Bad, "a memo put with nothing to put");
        return -1;
    }
    if (idx < 0 || idx > p->memo_len) {
        PyErr_Format(Bad, "a memo index out of order (%zd where the next is %zd) asks for memory no snapshot needs", idx, p->memo_len);
        return -1;
    }
    if (idx == p->memo_len) {
        if (grow((void **)&p->memo, &p->memo_cap, idx + 1, sizeof(PyObject *)) < 0) return -1;
        p->memo[p->memo_len++] = NULL;
    }
    PyObject *o = p->st[p->st_len - 1];
    Py_INCREF(o);
    Py_XSETREF(p->memo[idx], o);
    if (p->in_trace) {
        if (grow((void **)&p->log, &p->log_cap, p->log_len + 1, sizeof(Py_ssize_t)) < 0) return -1;
        p->log[p->log_len++] = idx;
    }
    return 0;
}

static int memo_get(P *p, Py_ssize_t idx) {
    if (idx < 0 || idx >= p->memo_len || !p->memo[idx]) {
        PyErr_Format(Bad, "memo index %zd was never put", idx);
        return -1;
    }
    Py_INCREF(p->memo[idx]);
    return push(p, p->memo[idx]);
}

static PyObject *refuse_global(P *p, PyObject *module, PyObject *name) {
    PyErr_Format(Refused, "global %.80S.%.80S", module, name);
    return NULL;
}

static PyObject *run(P *p) {
    PyObject *result = NULL;
    for (;;) {
        NEED(1);
        unsigned char op = (unsigned char)p->buf[p->pos++];
        unsigned char *s;
        Py_ssize_t n, m;
        switch (op) {
        case 0x80: /* PROTO */
            NEED(1);
            if ((unsigned char)p->buf[p->pos] > 5) { PyErr_SetString(Bad, "an unknown pickle protocol"); goto error; }
            p->pos++;
            break;
        case 0x95: /* FRAME */
            NEED(8);
            p->pos += 8;
            break;
        case '.': /* STOP */
            if (p->st_len != 1 || p->mk_len) { PyErr_SetString(Bad, "the pickle stops with objects left over"); goto error; }
            result = p->st[0];
            p->st_len = 0;
            return result;
        case '(': /* MARK */
            if (grow((void **)&p->marks, &p->mk_cap, p->mk_len + 1, sizeof(Py_ssize_t)) < 0) goto error;
            p->marks[p->mk_len++] = p->st_len;
            break;
        case '0': /* POP */
            if (p->mk_len && p->marks[p->mk_len - 1] == p->st_len) p->mk_len--;
            else {
                if (!floor_ok(p, 1)) goto error;
                Py_DECREF(p->st[--p->st_len]);
            }
            break;
        case '1': /* POP_MARK */
            if ((m = marker(p)) < 0) goto error;
            while (p->st_len > m) Py_DECREF(p->st[--p->st_len]);
            break;
        case '2': /* DUP */
            if (!floor_ok(p, 1)) goto error;
            Py_INCREF(p->st[p->st_len - 1]);
            if (push(p, p->st[p->st_len - 1]) < 0) goto error;
            break;
        case 'N': Py_INCREF(Py_None); if (push(p, Py_None) < 0) goto error; break;
        case 0x88: Py_INCREF(Py_True); if (push(p, Py_True) < 0) goto error; break;
        case 0x89: Py_INCREF(Py_False); if (push(p, Py_False) < 0) goto error; break;
        case 'J': /* BININT */
            NEED(4); s = (unsigned char *)p->buf + p->pos; p->pos += 4;
            if (push(p, PyLong_FromLong((int32_t)(uint32_t)le(s, 4))) < 0) goto error;
            break;
        case 'K': /* BININT1 */
            NEED(1); s = (unsigned char *)p->buf + p->pos; p->pos += 1;
            if (push(p, PyLong_FromLong(s[0])) < 0) goto error;
            break;
        case 'M': /* BININT2 */
            NEED(2); s = (unsigned char *)p->buf + p->pos; p->pos += 2;
            if (push(p, PyLong_FromLong((long)le(s, 2))) < 0) goto error;
            break;
        case 0x8a: /* LONG1 */
        case 0x8b: /* LONG4 */
            if (op == 0x8a) { NEED(1); n = (unsigned char)p->buf[p->pos]; p->pos += 1; }
            else {
                NEED(4); n = (Py_ssize_t)(int32_t)(uint32_t)le((unsigned char *)p->buf + p->pos, 4); p->pos += 4;
                if (n < 0) { PyErr_SetString(Bad, "a negative LONG4 length"); goto error; }
            }
            NEED(n); s = (unsigned char *)p->buf + p->pos; p->pos += n;
            if (n == 0) { if (push(p, PyLong_FromLong(0)) < 0) goto error; }
            else if (n <= 8) {
                uint64_t u = le(s, (int)n);
                if (n < 8 && (s[n - 1] & 0x80)) u |= ~(uint64_t)0 << (8 * n);
                if (push(p, PyLong_FromLongLong((long long)u)) < 0) goto error;
            } else {
                PyObject *b = PyBytes_FromStringAndSize((char *)s, n);
                if (!b) goto error;
                PyObject *v = PyObject_CallMethod((PyObject *)&PyLong_Type, "from_bytes", "Os", b, "little");
                Py_DECREF(b);
                if (!v) goto error;
                /* signed: from_bytes(..., signed=True) without kwargs: fix the sign by hand */
                if (s[n - 1] & 0x80) {
                    PyObject *one = PyLong_FromLong(1), *sh = PyLong_FromSsize_t(8 * n);
                    PyObject *big = one && sh ? PyNumber_Lshift(one, sh) : NULL;
                    PyObject *w = big ? PyNumber_Subtract(v, big) : NULL;
                    Py_XDECREF(one); Py_XDECREF(sh); Py_XDECREF(big); Py_DECREF(v);
                    if (!w) goto error;
                    v = w;
                }
                if (push(p, v) < 0) goto error;
            }
            break;
        case 'G': { /* BINFLOAT: big-endian IEEE 754 double */
            NEED(8); s = (unsigned char *)p->buf + p->pos; p->pos += 8;
            uint64_t u = 0;
            for (int i = 0; i < 8; i++) u = (u << 8) | s[i];
            double d;
            memcpy(&d, &u, 8);
            if (push(p, PyFloat_FromDouble(d)) < 0) goto error;
            break;
        }
        case 0x8c: /* SHORT_BINUNICODE */
        case 'X':  /* BINUNICODE */
        case 0x8d: /* BINUNICODE8 */
        case 'C':  /* SHORT_BINBYTES */
        case 'B':  /* BINBYTES */
        case 0x8e: /* BINBYTES8 */ {
            int w = (op == 0x8c || op == 'C') ? 1 : (op == 'X' || op == 'B') ? 4 : 8;
            NEED(w);
            uint64_t len = le((unsigned char *)p->buf + p->pos, w);
            p->pos += w;
            if (len > (uint64_t)(p->size - p->offset + (p->end - p->pos))) {
                PyErr_SetString(Truncated, "the pickle ends before its last object");
                goto error;
            }
            n = (Py_ssize_t)len;
            NEED(n);
            PyObject *v = (op == 'C' || op == 'B' || op == 0x8e)
                              ? PyBytes_FromStringAndSize(p->buf + p->pos, n)
                              : PyUnicode_DecodeUTF8(p->buf + p->pos, n, "surrogatepass");
            p->pos += n;
            if (push(p, v) < 0) goto error;
            break;
        }
        case '}': if (push(p, PyDict_New()) < 0) goto error; break;
        case ']': if (new_list(p) < 0) goto error; break;
        case ')': if (push(p, PyTuple_New(0)) < 0) goto error; break;
        case 't': /* TUPLE */
        case 0x85: case 0x86: case 0x87: { /* TUPLE1..3 */
            Py_ssize_t from;
            if (op == 't') { if ((from = marker(p)) < 0) goto error; }
            else {
                n = op - 0x84;
                if (!floor_ok(p, n)) goto error;
                from = p->st_len - n;
            }
            PyObject *t = PyTuple_New(p->st_len - from);
            if (!t) goto error;
            for (Py_ssize_t j = from; j < p->st_len; j++) {
                if (p->st[j] == CONSUMED) p->saw_consumed = 1;
                PyTuple_SET_ITEM(t, j - from, p->st[j]);
            }
            p->st_len = from;
            if (push(p, t) < 0) goto error;
            break;
        }
        case 'a': /* APPEND */
            if (!floor_ok(p, 2)) goto error;
            if (appends(p, p->st_len - 1) < 0) goto error;
            break;
        case 'e': /* APPENDS */
            if ((m = marker(p)) < 0 || appends(p, m) < 0) goto error;
            break;
        case 's': /* SETITEM */
            if (!floor_ok(p, 3)) goto error;
            if (setitems(p, p->st_len - 2) < 0) goto error;
            break;
        case 'u': /* SETITEMS */
            if ((m = marker(p)) < 0 || setitems(p, m) < 0) goto error;
            break;
        case 'q': NEED(1); n = (unsigned char)p->buf[p->pos]; p->pos += 1; if (memo_put(p, n) < 0) goto error; break;
        case 'r':
            NEED(4); n = (Py_ssize_t)le((unsigned char *)p->buf + p->pos, 4); p->pos += 4;
            if (memo_put(p, n) < 0) goto error;
            break;
        case 0x94: if (memo_put(p, p->memo_len) < 0) goto error; break; /* MEMOIZE */
        case 'h': NEED(1); n = (unsigned char)p->buf[p->pos]; p->pos += 1; if (memo_get(p, n) < 0) goto error; break;
        case 'j':
            NEED(4); n = (Py_ssize_t)le((unsigned char *)p->buf + p->pos, 4); p->pos += 4;
            if (memo_get(p, n) < 0) goto error;
            break;
        case 0x93: /* STACK_GLOBAL */
            if (p->st_len >= 2) return refuse_global(p, p->st[p->st_len - 2], p->st[p->st_len - 1]);
            PyErr_SetString(Refused, "STACK_GLOBAL");
            goto error;
        case 'c': { /* GLOBAL module\nname\n */
            PyObject *parts[2] = {NULL, NULL};
            for (int k = 0; k < 2; k++) {
                Py_ssize_t j = 0;
                for (;;) {
                    NEED(j + 1);
                    if (p->buf[p->pos + j] == '\n' || j >= 200) break;
                    j++;
                }
                parts[k] = PyUnicode_DecodeLatin1(p->buf + p->pos, j, NULL);
                p->pos += j + (p->buf[p->pos + j] == '\n');
            }
            if (parts[0] && parts[1]) refuse_global(p, parts[0], parts[1]);
            Py_XDECREF(parts[0]);
            Py_XDECREF(parts[1]);
            goto error;
        }
        case 'R': case 'b': case 'i': case 'o': case 0x81: case 0x92: case 'P': case 'Q':
        case 0x82: case 0x83: case 0x84:
            PyErr_Format(Refused, "opcode 0x%02x", op);
            goto error;
        default:
            PyErr_Format(Unsupported, "opcode 0x%02x at byte %lld", op, p->offset - (p->end - p->pos) - 1);
            goto error;
        }
    }
error:
    return NULL;
}

static void clear(P *p) {
    for (Py_ssize_t j = 0; j < p->st_len; j++) Py_XDECREF(p->st[j]);
    for (Py_ssize_t j = 0; j < p->memo_len; j++) Py_XDECREF(p->memo[j]);
    PyMem_Free(p->st); PyMem_Free(p->marks); PyMem_Free(p->memo); PyMem_Free(p->log); PyMem_Free(p->buf);
    p->st = NULL; p->memo = NULL; p->st_len = p->memo_len = 0;
    Py_XDECREF(p->cache); Py_XDECREF(p->swap); Py_XDECREF(p->strings);
}

static void free_cols(P *p) {
    for (Py_ssize_t d = 0; d < p->n_traces; d++) {
        Cols *c = &p->cols[d];
        Py_XDECREF(c->time); Py_XDECREF(c->action); Py_XDECREF(c->addr);
        Py_XDECREF(c->size); Py_XDECREF(c->stream); Py_XDECREF(c->stack);
    }
    PyMem_Free(p->cols);
    p->n_traces = 0;
}

PyDoc_STRVAR(read_doc,
             "read(fd, size, actions, intern, new_action, odd, progress) -> (root, traces)\n\n"
             "traces: per device (time_us, action, addr, size, stream, stack, timestamps), the first six\n"
             "bytearrays of int64, int16, int64, int64, int64, int32.");

static PyObject *read_snapshot(PyObject *self, PyObject *args) {
    P p;
    memset(&p, 0, sizeof p);
    long long size;
    if (!PyArg_ParseTuple(args, "iLO!OOOO", &p.fd, &size, &PyDict_Type, &p.actions, &p.intern, &p.new_action,
                          &p.odd, &p.progress))
        return NULL;
    p.size = size;
    p.next_report = REPORT;
    p.cache = PyDict_New();
    p.swap = PyDict_New();
    p.strings = PyDict_New();
    p.buf = PyMem_Malloc(CHUNK);
    p.cap = CHUNK;
    if (!p.cache || !p.swap || !p.strings || !p.buf) { clear(&p); return PyErr_NoMemory(); }
    PyObject *root = run(&p);
    if (p.saw_consumed && (root || !PyErr_ExceptionMatches(Cancelled))) {
        /* (an entry referred to again: whatever this read made of it, Python reads it whole) */
        Py_CLEAR(root);
        PyErr_Clear();
        PyErr_SetString(Unsupported, "a trace entry is referred to from elsewhere");
    }
    PyObject *out = NULL, *traces = NULL;
    if (root) {
        traces = PyList_New(p.n_traces);
        for (Py_ssize_t d = 0; traces && d < p.n_traces; d++) {
            Cols *c = &p.cols[d];
            PyObject *cs[6] = {c->time, c->action, c->addr, c->size, c->stream, c->stack};
            size_t width[6] = {8, 2, 8, 8, 8, 4};
            for (int i = 0; i < 6; i++)
                if (PyByteArray_Resize(cs[i], c->n * (Py_ssize_t)width[i]) < 0) Py_CLEAR(traces);
            if (!traces) break;
            PyList_SET_ITEM(traces, d, Py_BuildValue("OOOOOOO", c->time, c->action, c->addr, c->size, c->stream,
                                                     c->stack, c->timestamps ? Py_True : Py_False));
        }
        if (traces) out = PyTuple_Pack(2, root, traces);
    }
    Py_XDECREF(root);
    Py_XDECREF(traces);
    clear(&p);
    free_cols(&p);
    return out;
}

static PyMethodDef methods[] = {{"read", read_snapshot, METH_VARARGS, read_doc}, {NULL, NULL, 0, NULL}};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_columns",
                                    "A memory snapshot's pickle read into columns (core/snapshot/native.py).", -1,
                                    methods, NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit__columns(void) {
    PyObject *m = PyModule_Create(&module);
    if (!m) return NULL;
    Refused = PyErr_NewException("_columns.Refused", NULL, NULL);
    Unsupported = PyErr_NewException("_columns.Unsupported", NULL, NULL);
    Bad = PyErr_NewException("_columns.Bad", NULL, NULL);
    NotSnapshot = PyErr_NewException("_columns.NotSnapshot", NULL, NULL);
    Truncated = PyErr_NewException("_columns.Truncated", NULL, NULL);
    Cancelled = PyErr_NewException("_columns.Cancelled", NULL, NULL);
    CONSUMED = PyUnicode_FromString("<a trace entry, read into columns>");
    K_ACTION = PyUnicode_InternFromString("action");
    K_ADDR = PyUnicode_InternFromString("addr");
    K_SIZE = PyUnicode_InternFromString("size");
    K_STREAM = PyUnicode_InternFromString("stream");
    K_TIME = PyUnicode_InternFromString("time_us");
    K_FRAMES = PyUnicode_InternFromString("frames");
    K_POOL = PyUnicode_InternFromString("pool_id");
    K_DT = PyUnicode_InternFromString("device_traces");
    if (!Refused || !Unsupported || !Bad || !NotSnapshot || !Truncated || !Cancelled || !CONSUMED || !K_DT) return NULL;
    PyModule_AddObject(m, "Refused", Refused);
    PyModule_AddObject(m, "Unsupported", Unsupported);
    PyModule_AddObject(m, "Bad", Bad);
    Py_INCREF(NotSnapshot);
    PyModule_AddObject(m, "NotSnapshot", NotSnapshot);
    PyModule_AddObject(m, "Truncated", Truncated);
    PyModule_AddObject(m, "Cancelled", Cancelled);
    Py_INCREF(Refused); Py_INCREF(Unsupported); Py_INCREF(Bad); Py_INCREF(Truncated); Py_INCREF(Cancelled);
    return m;
}
