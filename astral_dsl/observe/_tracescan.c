/* The compiled road of the profiler-trace reader: a Kineto trace's JSON bytes -> the columns
 * kineto.read_scanned needs, without a Python object per event.
 *
 * Why C: every Python JSON library measured here (msgspec with a schema, orjson, pyarrow.json,
 * polars, duckdb) spends 5-50 ms on one 0.7 MB trace of 2,700 events; yyjson (vendored, MIT,
 * astral_dsl/_vendor/yyjson) parses it in about 1 ms, and this file walks the parsed events
 * once. README "Dependencies" and docs/diagnose.md say so with the figures.
 *
 * The contract (tests/test_tracescan.py checks it on thousands of documents): for every input,
 * either the result read from this module's columns is exactly the Python road's (tracedoc.py
 * then kineto.read), or scan() declines by returning None and the Python road reads the file.
 * It declines on bytes that are not one JSON document of the trace's shape (an event that is
 * not an object, `traceEvents` that is not a list), on a number past 64 bits or past a
 * double's range in a field it reads, and on a field value of a type whose meaning the
 * Python road decides (a kernel name that is not a string, a float correlation, ...). A key
 * given twice counts once, its last value, as msgspec and json read it.
 *
 * scan(body: bytes, nccl_keys: tuple[str, ...]) -> None or a tuple:
 *   0 info_json      bytes or None   `distributedInfo` written back as JSON (None: absent)
 *   1 props_json     bytes or None   `deviceProperties`, likewise
 *   2 ts             bytes           float64 per kernel (a complete event of a kernel
 *                                    category with a number start and a non-negative number
 *                                    duration), in file order
 *   3 dur            bytes           float64 per kernel
 *   4 memory         bytes           uint8 per kernel: 1 a gpu_memcpy / gpu_memset
 *   5 names          list[str]       per kernel (one object per distinct name)
 *   6 corr           list[int|None]  per kernel: its integer `correlation`, None otherwise
 *   7 devices        set[int]        the integer `device` arguments of the kernels
 *   8 nccl_number    bytes           int32 per kernel: -1, or the NCCL kernel's key number
 *                                    (distinct keys numbered in order of first appearance)
 *   9 nccl_values    list[tuple]     per key number: the values of nccl_keys (None, str, int
 *                                    or list of int)
 *  10 launches       dict[int,float] correlation -> start of the complete cuda_runtime
 *                                    events (the last one of a correlation counts)
 *  11 steps          list[tuple]     (name, ts, dur) of complete cpu_op / user_annotation
 *                                    events named ProfilerStep#...; ts and dur an int, a float
 *                                    or None (not a number)
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

#include "../_vendor/yyjson/yyjson.h"

#ifndef ASTRAL_SOURCE_SHA256
#define ASTRAL_SOURCE_SHA256 ""
#endif

#define MAX_NCCL_KEYS 32

/* ---- growable buffers -------------------------------------------------------------------- */

typedef struct {
    char *data;
    size_t len, cap;
} Buf;

static int buf_reserve(Buf *b, size_t more) {
    if (b->len + more <= b->cap) return 0;
    size_t cap = b->cap ? b->cap : 256;
    while (cap < b->len + more) {
        if (cap > SIZE_MAX / 2) return -1;
        cap *= 2;
    }
    char *p = realloc(b->data, cap);
    if (!p) return -1;
    b->data = p;
    b->cap = cap;
    return 0;
}

static int buf_put(Buf *b, const void *src, size_t n) {
    if (buf_reserve(b, n)) return -1;
    memcpy(b->data + b->len, src, n);
    b->len += n;
    return 0;
}

/* ---- a set of byte strings, numbered in order of insertion ---------------------------- */

typedef struct {
    uint64_t hash;
    size_t off, len;           /* the key's bytes: keys.data[off : off + len] */
    int32_t number;            /* -1: an empty slot */
} Slot;

typedef struct {
    Slot *slots;
    size_t cap, count;
    Buf keys;
} Interner;

/* Python's own hash of bytes (SipHash, keyed per process): a trace crafted to collide cannot
 * make the table quadratic, and the numbering never depends on it (it is insertion order). */
static uint64_t hash_bytes(const char *p, size_t n) {
#if PY_VERSION_HEX >= 0x030E0000
    return (uint64_t)Py_HashBuffer(p, (Py_ssize_t)n);
#else
    return (uint64_t)_Py_HashBytes(p, (Py_ssize_t)n);
#endif
}

static int interner_grow(Interner *t) {
    size_t cap = t->cap ? t->cap * 2 : 64;
    Slot *slots = malloc(cap * sizeof(Slot));
    if (!slots) return -1;
    for (size_t i = 0; i < cap; i++) slots[i].number = -1;
    for (size_t i = 0; i < t->cap; i++) {
        if (t->slots[i].number < 0) continue;
        size_t j = t->slots[i].hash & (cap - 1);
        while (slots[j].number >= 0) j = (j + 1) & (cap - 1);
        slots[j] = t->slots[i];
    }
    free(t->slots);
    t->slots = slots;
    t->cap = cap;
    return 0;
}

/* The number of key p[0:n] (a new one when unseen: *fresh = 1); -1 when out of memory. */
static int32_t interner_number(Interner *t, const char *p, size_t n, int *fresh) {
    *fresh = 0;
    if ((t->count + 1) * 2 > t->cap && interner_grow(t)) return -1;
    uint64_t h = hash_bytes(p, n);
    size_t j = h & (t->cap - 1);
    while (t->slots[j].number >= 0) {
        Slot *s = &t->slots[j];
        if (s->hash == h && s->len == n && memcmp(t->keys.data + s->off, p, n) == 0)
            return s->number;
        j = (j + 1) & (t->cap - 1);
    }
    if (t->count >= INT32_MAX) return -1;
    size_t off = t->keys.len;
    if (buf_put(&t->keys, p, n)) return -1;
    t->slots[j].hash = h;
    t->slots[j].off = off;
    t->slots[j].len = n;
    t->slots[j].number = (int32_t)t->count;
    t->count++;
    *fresh = 1;
    return t->slots[j].number;
}

static void interner_free(Interner *t) {
    free(t->slots);
    free(t->keys.data);
}

/* ---- reading values --------------------------------------------------------------------- */

enum { DECLINE = -2, FAIL = -1, OK = 0 };

static int is_str(yyjson_val *v, const char *s, size_t n) {
    return v && yyjson_is_str(v) && yyjson_get_len(v) == n && memcmp(yyjson_get_str(v), s, n) == 0;
}

#define IS(v, lit) is_str((v), (lit), sizeof(lit) - 1)

static int key_is(yyjson_val *k, const char *s, size_t n) {
    return yyjson_get_len(k) == n && memcmp(yyjson_get_str(k), s, n) == 0;
}

#define KEY(k, lit) key_is((k), (lit), sizeof(lit) - 1)

/* A number read as a float64: 1 (and *out), 0 when the value is no number (absent, null, a
 * bool, a string, a container), DECLINE when it is a number past 64 bits or a double. */
static int number(yyjson_val *v, double *out) {
    if (!v) return 0;
    switch (yyjson_get_tag(v)) {
    case YYJSON_TYPE_NUM | YYJSON_SUBTYPE_UINT: *out = (double)yyjson_get_uint(v); return 1;
    case YYJSON_TYPE_NUM | YYJSON_SUBTYPE_SINT: *out = (double)yyjson_get_sint(v); return 1;
    case YYJSON_TYPE_NUM | YYJSON_SUBTYPE_REAL: *out = yyjson_get_real(v); return 1;
    case YYJSON_TYPE_RAW: return DECLINE;
    default: return 0;
    }
}

static int is_int(yyjson_val *v) {
    return v && (yyjson_is_uint(v) || yyjson_is_sint(v));
}

static PyObject *py_int(yyjson_val *v) {
    return yyjson_is_uint(v) ? PyLong_FromUnsignedLongLong(yyjson_get_uint(v))
                             : PyLong_FromLongLong(yyjson_get_sint(v));
}

static PyObject *py_str(yyjson_val *v) {
    return PyUnicode_DecodeUTF8(yyjson_get_str(v), (Py_ssize_t)yyjson_get_len(v), NULL);
}

/* A number as the Python road has it (int or float), None when no number; NULL + *decline
 * for a big number. */
static PyObject *py_number(yyjson_val *v, int *decline) {
    if (v && yyjson_is_raw(v)) { *decline = 1; return NULL; }
    if (is_int(v)) return py_int(v);
    if (v && yyjson_is_real(v)) return PyFloat_FromDouble(yyjson_get_real(v));
    Py_RETURN_NONE;
}

/* ---- one pass over the events ---------------------------------------------------------- */

typedef struct {
    const char *keys[MAX_NCCL_KEYS];
    size_t key_len[MAX_NCCL_KEYS];
    Py_ssize_t n_keys;
    /* per kernel */
    Buf ts, dur, memory, nccl_number;
    PyObject *names, *corr, *devices, *nccl_values, *launches, *steps;
    PyObject **name_objects;        /* per distinct name */
    size_t name_objects_cap;
    Interner name_ids, nccl_ids;
    Buf scratch;
} Scan;

typedef struct {                    /* the fields of one event that are read (last one wins) */
    yyjson_val *ph, *cat, *name, *ts, *dur, *args;
} Event;

typedef struct {
    yyjson_val *corr, *device;
    yyjson_val *nccl[MAX_NCCL_KEYS];
} Args;

static void event_fields(yyjson_val *obj, Event *e) {
    memset(e, 0, sizeof *e);
    size_t i, n;
    yyjson_val *k, *v;
    yyjson_obj_foreach(obj, i, n, k, v) {
        switch (yyjson_get_len(k)) {
        case 2: if (KEY(k, "ph")) e->ph = v; else if (KEY(k, "ts")) e->ts = v; break;
        case 3: if (KEY(k, "cat")) e->cat = v; else if (KEY(k, "dur")) e->dur = v; break;
        case 4: if (KEY(k, "name")) e->name = v; else if (KEY(k, "args")) e->args = v; break;
        default: break;
        }
    }
    /* null counts as absent, as on the Python road */
    if (e->ph && yyjson_is_null(e->ph)) e->ph = NULL;
    if (e->cat && yyjson_is_null(e->cat)) e->cat = NULL;
    if (e->name && yyjson_is_null(e->name)) e->name = NULL;
    if (e->ts && yyjson_is_null(e->ts)) e->ts = NULL;
    if (e->dur && yyjson_is_null(e->dur)) e->dur = NULL;
}

static void args_fields(Scan *s, yyjson_val *obj, Args *a, int want_nccl) {
    memset(a, 0, sizeof *a);
    if (!obj || !yyjson_is_obj(obj)) return;     /* absent, null, not an object: no arguments */
    size_t i, n;
    yyjson_val *k, *v;
    yyjson_obj_foreach(obj, i, n, k, v) {
        if (KEY(k, "correlation")) a->corr = v;
        else if (KEY(k, "device")) a->device = v;
        else if (want_nccl) {
            for (Py_ssize_t j = 0; j < s->n_keys; j++)
                if (key_is(k, s->keys[j], s->key_len[j])) { a->nccl[j] = v; break; }
        }
    }
    if (a->corr && yyjson_is_null(a->corr)) a->corr = NULL;
    if (a->device && yyjson_is_null(a->device)) a->device = NULL;
    for (Py_ssize_t j = 0; j < s->n_keys; j++)
        if (a->nccl[j] && yyjson_is_null(a->nccl[j])) a->nccl[j] = NULL;
}

/* An integer written canonically: tag 2 and its value when it is not negative, else tag 3. */
static int put_int(Buf *b, yyjson_val *v) {
    unsigned char tag = 2;
    uint64_t x;
    if (yyjson_is_uint(v)) x = yyjson_get_uint(v);
    else {
        int64_t i = yyjson_get_sint(v);
        if (i < 0) tag = 3;
        x = (uint64_t)i;
    }
    return (buf_put(b, &tag, 1) || buf_put(b, &x, sizeof x)) ? FAIL : OK;
}

/* One NCCL key value written canonically into scratch (equal values, equal bytes): 0 none,
 * 1 str, 2/3 int, 4 list of int. DECLINE for any other type (its meaning is the Python road's
 * to decide). */
static int put_key_value(Buf *b, yyjson_val *v) {
    unsigned char tag;
    if (!v) { tag = 0; return buf_put(b, &tag, 1) ? FAIL : OK; }
    if (yyjson_is_str(v)) {
        uint64_t n = yyjson_get_len(v);
        tag = 1;
        if (buf_put(b, &tag, 1) || buf_put(b, &n, sizeof n) || buf_put(b, yyjson_get_str(v), n))
            return FAIL;
        return OK;
    }
    if (is_int(v)) return put_int(b, v);
    if (yyjson_is_arr(v)) {
        uint64_t n = yyjson_arr_size(v);
        tag = 4;
        if (buf_put(b, &tag, 1) || buf_put(b, &n, sizeof n)) return FAIL;
        size_t i, m;
        yyjson_val *x;
        yyjson_arr_foreach(v, i, m, x) {
            if (!is_int(x)) return DECLINE;
            if (put_int(b, x)) return FAIL;
        }
        return OK;
    }
    return DECLINE;
}

static PyObject *py_key_value(yyjson_val *v) {
    if (!v) Py_RETURN_NONE;
    if (yyjson_is_str(v)) return py_str(v);
    if (is_int(v)) return py_int(v);
    PyObject *list = PyList_New((Py_ssize_t)yyjson_arr_size(v));
    if (!list) return NULL;
    size_t i, m;
    yyjson_val *x;
    yyjson_arr_foreach(v, i, m, x) {
        PyObject *o = py_int(x);
        if (!o) { Py_DECREF(list); return NULL; }
        PyList_SET_ITEM(list, (Py_ssize_t)i, o);
    }
    return list;
}

static int nccl_name(yyjson_val *name) {
    if (yyjson_get_len(name) < 4) return 0;
    const char *p = yyjson_get_str(name);
    return (p[0] | 0x20) == 'n' && (p[1] | 0x20) == 'c' && (p[2] | 0x20) == 'c' &&
           (p[3] | 0x20) == 'l';
}

static int add_kernel(Scan *s, const Event *e, int memory) {
    double ts, dur;
    int r = number(e->ts, &ts);
    if (r == DECLINE) return DECLINE;
    int q = number(e->dur, &dur);
    if (q == DECLINE) return DECLINE;
    if (!e->name || !yyjson_is_str(e->name)) return DECLINE;    /* str(name) is Python's */
    if (r == 0 || q == 0 || !(dur >= 0)) return OK;             /* no start or duration */
    int nccl = !memory && nccl_name(e->name);
    Args a;
    args_fields(s, e->args, &a, nccl);
    /* correlation: an int, else nothing to match (a float would equal an int: declined) */
    PyObject *corr;
    if (a.corr && yyjson_is_raw(a.corr)) return DECLINE;
    if (a.corr && yyjson_is_real(a.corr)) return DECLINE;
    if (is_int(a.corr)) {
        corr = py_int(a.corr);
        if (!corr) return FAIL;
    } else {
        corr = Py_None;
        Py_INCREF(corr);
    }
    /* device: an int is a device id; a string or float is the Python road's to judge */
    if (a.device && (yyjson_is_raw(a.device) || yyjson_is_str(a.device) ||
                     yyjson_is_real(a.device))) {
        Py_DECREF(corr);
        return DECLINE;
    }
    if (is_int(a.device)) {
        PyObject *d = py_int(a.device);
        if (!d || PySet_Add(s->devices, d)) { Py_XDECREF(d); Py_DECREF(corr); return FAIL; }
        Py_DECREF(d);
    }
    int32_t key = -1;
    if (nccl) {
        s->scratch.len = 0;
        for (Py_ssize_t j = 0; j < s->n_keys; j++) {
            int w = put_key_value(&s->scratch, a.nccl[j]);
            if (w != OK) { Py_DECREF(corr); return w; }
        }
        int fresh;
        key = interner_number(&s->nccl_ids, s->scratch.data, s->scratch.len, &fresh);
        if (key < 0) { Py_DECREF(corr); return FAIL; }
        if (fresh) {
            PyObject *values = PyTuple_New(s->n_keys);
            if (!values) { Py_DECREF(corr); return FAIL; }
            for (Py_ssize_t j = 0; j < s->n_keys; j++) {
                PyObject *o = py_key_value(a.nccl[j]);
                if (!o) { Py_DECREF(values); Py_DECREF(corr); return FAIL; }
                PyTuple_SET_ITEM(values, j, o);
            }
            int bad = PyList_Append(s->nccl_values, values);
            Py_DECREF(values);
            if (bad) { Py_DECREF(corr); return FAIL; }
        }
    }
    /* the name: one Python string per distinct name */
    int fresh;
    int32_t id = interner_number(&s->name_ids, yyjson_get_str(e->name), yyjson_get_len(e->name),
                                 &fresh);
    if (id < 0) { Py_DECREF(corr); return FAIL; }
    if (fresh) {
        if ((size_t)id >= s->name_objects_cap) {
            size_t cap = s->name_objects_cap ? s->name_objects_cap * 2 : 64;
            PyObject **p = realloc(s->name_objects, cap * sizeof(PyObject *));
            if (!p) { Py_DECREF(corr); return FAIL; }
            s->name_objects = p;
            s->name_objects_cap = cap;
        }
        s->name_objects[id] = py_str(e->name);      /* NULL (and counted) if it fails */
        if (!s->name_objects[id]) { Py_DECREF(corr); return FAIL; }
    }
    unsigned char mem = (unsigned char)memory;
    if (PyList_Append(s->names, s->name_objects[id]) || PyList_Append(s->corr, corr) ||
        buf_put(&s->ts, &ts, sizeof ts) || buf_put(&s->dur, &dur, sizeof dur) ||
        buf_put(&s->memory, &mem, 1) || buf_put(&s->nccl_number, &key, sizeof key)) {
        Py_DECREF(corr);
        return FAIL;
    }
    Py_DECREF(corr);
    return OK;
}

static int add_launch(Scan *s, const Event *e) {
    Args a;
    args_fields(s, e->args, &a, 0);
    if (a.corr && yyjson_is_raw(a.corr)) return DECLINE;
    double ts;
    int r = number(e->ts, &ts);
    if (r == DECLINE) return DECLINE;
    if (!is_int(a.corr) || r == 0) return OK;         /* an integer correlation, a start */
    PyObject *k = py_int(a.corr), *t = PyFloat_FromDouble(ts);
    int bad = !k || !t || PyDict_SetItem(s->launches, k, t);
    Py_XDECREF(k);
    Py_XDECREF(t);
    return bad ? FAIL : OK;
}

static int add_step(Scan *s, const Event *e) {
    if (!e->name || !yyjson_is_str(e->name) || yyjson_get_len(e->name) < 13 ||
        memcmp(yyjson_get_str(e->name), "ProfilerStep#", 13) != 0)
        return OK;
    int decline = 0;
    PyObject *name = py_str(e->name);
    PyObject *ts = name ? py_number(e->ts, &decline) : NULL;
    PyObject *dur = ts ? py_number(e->dur, &decline) : NULL;
    int result = FAIL;
    if (decline) result = DECLINE;
    else if (dur) {
        PyObject *row = PyTuple_Pack(3, name, ts, dur);
        if (row && !PyList_Append(s->steps, row)) result = OK;
        Py_XDECREF(row);
    }
    Py_XDECREF(name);
    Py_XDECREF(ts);
    Py_XDECREF(dur);
    return result;
}

static int scan_events(Scan *s, yyjson_val *events) {
    size_t i, n;
    yyjson_val *ev;
    yyjson_arr_foreach(events, i, n, ev) {
        if (!yyjson_is_obj(ev)) return DECLINE;      /* the Python road drops it */
        Event e;
        event_fields(ev, &e);
        if (!e.cat || !yyjson_is_str(e.cat) || !IS(e.ph, "X")) continue;
        int r = OK;
        switch (yyjson_get_len(e.cat)) {
        case 6: if (IS(e.cat, "kernel")) r = add_kernel(s, &e, 0);
                else if (IS(e.cat, "cpu_op")) r = add_step(s, &e);
                break;
        case 10: if (IS(e.cat, "gpu_memcpy") || IS(e.cat, "gpu_memset")) r = add_kernel(s, &e, 1);
                 break;
        case 12: if (IS(e.cat, "cuda_runtime")) r = add_launch(s, &e); break;
        case 15: if (IS(e.cat, "user_annotation")) r = add_step(s, &e); break;
        default: break;
        }
        if (r != OK) return r;
    }
    return OK;
}

/* A subtree written back as JSON bytes for the Python side to load (None when absent). */
static PyObject *written(yyjson_val *v, int *fail) {
    if (!v) Py_RETURN_NONE;
    size_t len;
    char *text = yyjson_val_write(v, YYJSON_WRITE_ALLOW_INVALID_UNICODE, &len);
    if (!text) { *fail = 1; return NULL; }
    PyObject *out = PyBytes_FromStringAndSize(text, (Py_ssize_t)len);
    free(text);
    if (!out) *fail = 1;
    return out;
}

static PyObject *bytes_of(Buf *b) {
    return PyBytes_FromStringAndSize(b->data ? b->data : "", (Py_ssize_t)b->len);
}

static void scan_free(Scan *s) {
    free(s->ts.data); free(s->dur.data); free(s->memory.data); free(s->nccl_number.data);
    free(s->scratch.data);
    /* a name is numbered before its string is made: the last may be missing (no memory) */
    size_t made = s->name_ids.count < s->name_objects_cap ? s->name_ids.count
                                                           : s->name_objects_cap;
    for (size_t i = 0; i < made; i++) Py_XDECREF(s->name_objects[i]);
    free(s->name_objects);
    interner_free(&s->name_ids);
    interner_free(&s->nccl_ids);
    Py_XDECREF(s->names); Py_XDECREF(s->corr); Py_XDECREF(s->devices);
    Py_XDECREF(s->nccl_values); Py_XDECREF(s->launches); Py_XDECREF(s->steps);
}

static PyObject *scan(PyObject *self, PyObject *args) {
    Py_buffer body;
    PyObject *keys;
    if (!PyArg_ParseTuple(args, "y*O!", &body, &PyTuple_Type, &keys)) return NULL;
    Scan s;
    memset(&s, 0, sizeof s);
    PyObject *result = NULL;
    yyjson_doc *doc = NULL;
    s.n_keys = PyTuple_GET_SIZE(keys);
    if (s.n_keys > MAX_NCCL_KEYS) {
        PyErr_SetString(PyExc_ValueError, "too many argument keys");
        goto done;
    }
    for (Py_ssize_t j = 0; j < s.n_keys; j++) {
        Py_ssize_t n;
        PyObject *k = PyTuple_GET_ITEM(keys, j);
        if (!PyUnicode_Check(k)) { PyErr_SetString(PyExc_TypeError, "keys are str"); goto done; }
        s.keys[j] = PyUnicode_AsUTF8AndSize(k, &n);
        if (!s.keys[j]) goto done;
        s.key_len[j] = (size_t)n;
    }
    yyjson_read_err err;
    Py_BEGIN_ALLOW_THREADS
    doc = yyjson_read_opts((char *)body.buf, (size_t)body.len, YYJSON_READ_BIGNUM_AS_RAW, NULL,
                           &err);
    Py_END_ALLOW_THREADS
    if (!doc) goto decline;                          /* not one JSON document */
    yyjson_val *root = yyjson_doc_get_root(doc), *events = NULL, *info = NULL, *props = NULL;
    if (yyjson_is_arr(root)) events = root;
    else if (yyjson_is_obj(root)) {
        size_t i, n;
        yyjson_val *k, *v;
        yyjson_obj_foreach(root, i, n, k, v) {
            if (KEY(k, "traceEvents")) events = v;
            else if (KEY(k, "distributedInfo")) info = v;
            else if (KEY(k, "deviceProperties")) props = v;
        }
    }
    if (!events || !yyjson_is_arr(events)) goto decline;
    if (info && yyjson_is_null(info)) info = NULL;
    if (props && yyjson_is_null(props)) props = NULL;
    if (!(s.names = PyList_New(0)) || !(s.corr = PyList_New(0)) || !(s.devices = PySet_New(NULL)) ||
        !(s.nccl_values = PyList_New(0)) || !(s.launches = PyDict_New()) ||
        !(s.steps = PyList_New(0)))
        goto done;
    int r = scan_events(&s, events);
    if (r == DECLINE) goto decline;
    if (r == FAIL) {
        if (PyErr_Occurred() && PyErr_ExceptionMatches(PyExc_UnicodeDecodeError)) goto decline;
        if (!PyErr_Occurred()) PyErr_NoMemory();
        goto done;
    }
    int fail = 0;
    PyObject *info_json = written(info, &fail);
    PyObject *props_json = fail ? NULL : written(props, &fail);
    if (fail) { Py_XDECREF(info_json); goto done; }
    /* `N` passes a new reference on, `O` takes one of its own (the lists, set and dict are
     * released with the scan) */
    result = Py_BuildValue("(NNNNNOOONOOO)", info_json, props_json, bytes_of(&s.ts),
                           bytes_of(&s.dur), bytes_of(&s.memory), s.names, s.corr, s.devices,
                           bytes_of(&s.nccl_number), s.nccl_values, s.launches, s.steps);
    goto done;
decline:
    PyErr_Clear();
    result = Py_None;
    Py_INCREF(result);
done:
    if (doc) yyjson_doc_free(doc);
    scan_free(&s);
    PyBuffer_Release(&body);
    return result;
}

static PyMethodDef methods[] = {
    {"scan", scan, METH_VARARGS, "A trace's bytes -> its kernel columns, or None (declined)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_tracescan", "The compiled road of the profiler-trace reader.", -1,
    methods,
};

PyMODINIT_FUNC PyInit__tracescan(void) {
    PyObject *m = PyModule_Create(&module);
    if (!m) return NULL;
    if (PyModule_AddStringConstant(m, "SOURCE_SHA256", ASTRAL_SOURCE_SHA256) ||
        PyModule_AddStringConstant(m, "YYJSON_VERSION", YYJSON_VERSION_STRING)) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
