/* _speedups: optional C stand-ins for the port's hottest Python functions (the Python ones are the reference).
 *
 * Each Python reference is marked where it is defined, @c_stand_in(name) (types.py); the name is what
 * stand_in() below is asked for, and the reference stays types.REFERENCES[name]. Same arguments,
 * same result, same objects interned; any input or call form off the common path is handed to the
 * reference:
 *
 *   spec_init                    "DistTensorSpec.__init__" (a method descriptor on the class)
 *   spec_check                   "DistTensorSpec.check" (its error worded when first read: refusal_type)
 *   attr_make(dm, partial, mesh) "DistAttr.make"
 *   result_make(inputs, outputs) "SpmdResult.make"
 *   merge_shardings(tensors)     "notation.merge_shardings"
 *   mapping_for_axes(axes, dims) "notation.mapping_for_axes"
 *   valid_inputs(specs, names)   = ops/kit/tensor.py's _valid_inputs      (configure_rules)
 *   rule_input_attr              -> RuleInput.attr; the reference is RuleInput._attr (configure_rules)
 *
 * A method is put in place by the class decorator types.c_stand_ins once its class exists (stand_in
 * reads the class's slot offsets); a module function, at once. Nothing is replaced when
 * PADDLE_SPMD_PORT_PURE is set; the rules themselves are Python only.
 *
 * spec_init takes every ordinary call form: positional or keyword arguments, partial_dims given or
 * not, shape / dims_mapping / partial dims as tuples or lists (a frozenset, set, tuple or list for the
 * partial dims), each item an integer the reference converts the same way (an exact int; a bool or an
 * int subclass, and a numpy integer scalar, by PyNumber_Index: operator.index's own function). It
 * makes each value its normal form (tuples of exact ints, co-shards by entry_of), then judges it on
 * the mesh (mesh 2x3, so mesh dims 0 and 1):
 *
 *   shape       dims_mapping  partial   here                      why
 *   (8, 6)      (0, -1)       {}        valid_on_mesh=True        entries in -1..1, none twice
 *   [8, 6]      [0, -1]       [1]       valid_on_mesh=True        the same values as lists
 *   (8, 6)      ((0, 1), -1)  {}        valid_on_mesh=True        a co-shard: two or more distinct dims
 *   [8, 6]      [[0], []]     {}        valid_on_mesh=True        short co-shard forms: (1,) is 1, () is -1
 *   (8, 6)      (1, 1)        {}        _problem "duplicate"      found here as
 *                                                                 DistTensorSpec._first_problem does
 *   (8, 6)      (0, -1)       {0}       _problem "partial-shard"  (worded by check: spec_problem)
 *   (8.0, 6)    ...           ...       Python reference          not an integer: the reference names it
 *   (-1, 6)     ...           ...       Python reference          a negative size: the reference raises
 *   (8, 6)      (0, -1)       ...       Python reference          on None or a ProcessMesh subclass
 *
 * and a value beyond a C long, a generator, a numpy array or any other form also goes to the
 * reference (given the converted values where the conversion is done, else the call as it came).
 * So this code never raises a spec error of its own: the wording of every problem it names is the
 * reference's, which tests/test_speedups.py holds it to (every field, on the same values, plus the
 * whole parity grid against a PADDLE_SPMD_PORT_PURE=1 process).
 *
 * spec_call is installed as the class's vectorcall, so DistTensorSpec(...) runs spec_init on the
 * arguments as they come, keywords included, instead of packing them into a tuple and a dict.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>

/* Slot offsets of the slotted value classes (DistTensorSpec, DistAttr, SpmdResult), read from their
 * member descriptors by stand_in: fields are read and written in place, as the slot
 * descriptors themselves do. */
static Py_ssize_t off_shape, off_dm, off_mesh, off_partial, off_problem, off_coshard, off_valid;
static Py_ssize_t off_attr_dm, off_attr_partial, off_attr_mesh, off_inputs, off_outputs;

#define SLOT(obj, off) (*(PyObject **)((char *)(obj) + (off)))

/* set a slot (the new value's reference is taken here) */
static inline void set_slot(PyObject *obj, Py_ssize_t off, PyObject *value) {
    Py_XSETREF(SLOT(obj, off), Py_NewRef(value));
}

/* set once by configure_types, stand_in and configure_rules */
static PyTypeObject *Mesh_t, *Spec_t, *Attr_t, *Result_t, *RuleInput_t;
static PyObject *interned;       /* types._INTERNED */
static PyObject *pure_init;      /* REFERENCES["DistTensorSpec.__init__"] */
static PyObject *pure_attr_make, *pure_result_make; /* REFERENCES["DistAttr.make"], ["SpmdResult.make"] */
static PyObject *pure_valid_inputs, *pure_rule_attr; /* ops.kit.tensor._valid_inputs, RuleInput._attr */
static PyObject *getter_mapping; /* ops.kit.tensor.getter_mapping */
static PyObject *no_partial;     /* the empty frozenset a RuleInput's attr gets by default */
static PyObject *as_input;       /* ops.kit.tensor.as_input: builds a None input */
static Py_ssize_t interned_limit; /* types.INTERNED_LIMIT */

static PyObject *s_shape, *s_dims_mapping, *s_mesh, *s_partial_dims, *s_valid_on_mesh, *s_coshard, *s_hash,
    *s_inputs, *s_outputs, *s_optional, *s_init, *empty_tuple,
    *s_length, *s_mesh_dim, *s_duplicate, *s_partial_range, *s_partial_shard, *empty_frozenset;

/* A set's items without an iterator object (one allocation per partial-dims set read), where
 * CPython's set API has it (3.13 took _PySet_NextEntry into its internals: an iterator there). */
#if PY_VERSION_HEX < 0x030D0000
#define HAVE_SET_NEXT 1
#endif

/* ---- DistTensorSpec.__init__ ------------------------------------------------------------------ */
/* The integers the fast path converts, as types._as_int does: an exact int as it is; an int subclass
 * (bool: True is 1) and a numpy integer scalar by PyNumber_Index, which is what operator.index calls.
 * A numpy scalar type is told by its name and by being a static type (numpy's are; a Python class
 * can take any name but is a heap type), so no numpy import is needed and no Python code runs.
 * Returns a new reference, or NULL with no error set for anything else (the reference decides). */
static int is_numpy_int(PyTypeObject *tp) {
    return !(tp->tp_flags & Py_TPFLAGS_HEAPTYPE) && strncmp(tp->tp_name, "numpy.", 6) == 0 &&
           tp->tp_as_number != NULL && tp->tp_as_number->nb_index != NULL;
}

static PyObject *as_exact_int(PyObject *item) {
    PyObject *out;
    if (PyLong_CheckExact(item))
        return Py_NewRef(item);
    if (!PyLong_Check(item) && (PyFloat_Check(item) || !is_numpy_int(Py_TYPE(item))))
        return NULL;
    out = PyNumber_Index(item);
    if (out == NULL || !PyLong_CheckExact(out)) {
        PyErr_Clear();
        Py_XDECREF(out);
        return NULL;
    }
    return out;
}

/* `seq` (a tuple or a list) as a tuple of exact ints, as types._int_tuple makes it: the very tuple
 * when it already is one; NULL with no error set when some item is not an integer, or `seq` neither
 * a tuple nor a list (the reference decides); NULL with an error set on a failure of Python's. */
static PyObject *int_tuple(PyObject *seq) {
    Py_ssize_t i, n;
    PyObject *out;
    if (PyTuple_CheckExact(seq)) {
        n = PyTuple_GET_SIZE(seq);
        for (i = 0; i < n && PyLong_CheckExact(PyTuple_GET_ITEM(seq, i)); i++)
            ;
        if (i == n)
            return Py_NewRef(seq);
    } else if (!PyList_CheckExact(seq)) {
        return NULL;
    }
    n = PySequence_Fast_GET_SIZE(seq);
    out = PyTuple_New(n);
    if (out == NULL)
        return NULL;
    for (i = 0; i < n; i++) {
        PyObject *item = as_exact_int(PySequence_Fast_GET_ITEM(seq, i));
        if (item == NULL) {
            Py_DECREF(out);
            return NULL;
        }
        PyTuple_SET_ITEM(out, i, item);
    }
    return out;
}

/* `dm` (a tuple or a list) as a dims_mapping in normal form, as types._mapping_tuple makes it (a
 * co-shard entry, a tuple or list of integers, by types.entry_of: () -> -1, (m,) -> m); *coshard is
 * set when some entry stays a tuple. NULL as int_tuple. */
static PyObject *mapping_tuple(PyObject *dm, int *coshard) {
    Py_ssize_t i, n;
    PyObject *out;
    *coshard = 0;
    if (PyTuple_CheckExact(dm)) {
        n = PyTuple_GET_SIZE(dm);
        for (i = 0; i < n && PyLong_CheckExact(PyTuple_GET_ITEM(dm, i)); i++)
            ;
        if (i == n)
            return Py_NewRef(dm);
    } else if (!PyList_CheckExact(dm)) {
        return NULL;
    }
    n = PySequence_Fast_GET_SIZE(dm);
    out = PyTuple_New(n);
    if (out == NULL)
        return NULL;
    for (i = 0; i < n; i++) {
        PyObject *item = PySequence_Fast_GET_ITEM(dm, i), *entry;
        if (PyTuple_CheckExact(item) || PyList_CheckExact(item)) {
            PyObject *members = int_tuple(item);
            if (members == NULL) {
                Py_DECREF(out);
                return NULL;
            }
            if (PyTuple_GET_SIZE(members) == 0) {
                entry = PyLong_FromLong(-1);
                Py_DECREF(members);
            } else if (PyTuple_GET_SIZE(members) == 1) {
                entry = Py_NewRef(PyTuple_GET_ITEM(members, 0));
                Py_DECREF(members);
            } else {
                entry = members;
                *coshard = 1;
            }
        } else {
            entry = as_exact_int(item);
        }
        if (entry == NULL) {
            Py_DECREF(out);
            return NULL;
        }
        PyTuple_SET_ITEM(out, i, entry);
    }
    return out;
}

/* The frozensets of mesh dims 0..7 given as a tuple or list (a user's partial_dims are a dim or two of
 * a small mesh), by their bitmask, made on first use: frozensets are immutable, so a spec may share
 * one as it shares the empty frozenset, and a list's partial dims cost no set built per spec. */
#define SMALL_SETS 256
static PyObject *small_sets[SMALL_SETS];

static PyObject *small_set(PyObject *seq, Py_ssize_t n) {
    Py_ssize_t i;
    unsigned mask = 0;
    for (i = 0; i < n; i++) {
        PyObject *item = PySequence_Fast_GET_ITEM(seq, i);
        int overflow = 0;
        long v = PyLong_AsLongAndOverflow(item, &overflow); /* an exact int: no error but overflow */
        if (overflow || v < 0 || v >= 8)
            return NULL;
        mask |= 1u << v;
    }
    if (small_sets[mask] == NULL)
        small_sets[mask] = PyFrozenSet_New(seq); /* NULL on an error: PyErr_Occurred tells */
    return Py_XNewRef(small_sets[mask]);
}

/* `partial` as a frozenset of exact ints (the very frozenset when it already is one); NULL as
 * int_tuple (a tuple, list, set or frozenset is read; anything else the reference decides). */
static PyObject *partial_set(PyObject *partial) {
    PyObject *items, *out, *it, *p;
    int exact = PyFrozenSet_CheckExact(partial);
    if (PyTuple_CheckExact(partial) || PyList_CheckExact(partial)) {
        Py_ssize_t i, n = PySequence_Fast_GET_SIZE(partial);
        for (i = 0; i < n && PyLong_CheckExact(PySequence_Fast_GET_ITEM(partial, i)); i++)
            ;
        if (i == n) {
            out = small_set(partial, n);
            if (out != NULL || PyErr_Occurred())
                return out;
            return PyFrozenSet_New(partial);
        }
        items = int_tuple(partial);
        if (items == NULL)
            return NULL;
        out = PyFrozenSet_New(items);
        Py_DECREF(items);
        return out;
    }
    if (!exact && !PyAnySet_CheckExact(partial))
        return NULL;
    if (exact) {
        int all_exact = 1;
#ifdef HAVE_SET_NEXT
        Py_ssize_t pos = 0;
        Py_hash_t hash;
        while (all_exact && _PySet_NextEntry(partial, &pos, &p, &hash)) /* p borrowed */
            all_exact = PyLong_CheckExact(p);
        if (all_exact)
            return Py_NewRef(partial);
    }
#else
        it = PyObject_GetIter(partial);
        if (it == NULL)
            return NULL;
        while (all_exact && (p = PyIter_Next(it)) != NULL) {
            all_exact = PyLong_CheckExact(p);
            Py_DECREF(p);
        }
        Py_DECREF(it);
        if (PyErr_Occurred())
            return NULL;
        if (all_exact)
            return Py_NewRef(partial);
    }
#endif
    out = PyFrozenSet_New(NULL);
    it = out == NULL ? NULL : PyObject_GetIter(partial);
    if (it == NULL) {
        Py_XDECREF(out);
        return NULL;
    }
    while ((p = PyIter_Next(it)) != NULL) {
        PyObject *v = as_exact_int(p);
        Py_DECREF(p);
        if (v == NULL || PySet_Add(out, v) < 0) {
            Py_XDECREF(v);
            Py_DECREF(it);
            Py_DECREF(out);
            return NULL;
        }
        Py_DECREF(v);
    }
    Py_DECREF(it);
    if (PyErr_Occurred()) {
        Py_DECREF(out);
        return NULL;
    }
    return out;
}

/* A non-negative exact int below `limit` (or -1 when allow_minus_one), as a C long; -2 when not. */
static long small_index(PyObject *item, long limit, int allow_minus_one) {
    int overflow = 0;
    long v;
    if (!PyLong_CheckExact(item))
        return -2;
    v = PyLong_AsLongAndOverflow(item, &overflow);
    if (overflow || (v == -1 && PyErr_Occurred())) {
        PyErr_Clear();
        return -2;
    }
    if (v == -1 && allow_minus_one)
        return -1;
    if (v < 0 || v >= limit)
        return -2;
    return v;
}

/* 1 when the normal-form values (tuples and a frozenset of exact ints, see the table above) are a
 * valid spec on `mesh` (an exact ProcessMesh), 0 when they are not or this code cannot tell, -1 on an
 * error. When 0 because of a mesh dim (out of range, or twice) or of a partial dim (everything before
 * it valid), *what is the problem's interned name, found as spec_problem finds it (for a partial dim:
 * the smallest outside the mesh or also sharding), so that the build does not go over the values
 * again; else *what stays NULL. */
static int normal_valid(PyObject *shape, PyObject *dm, PyObject *mesh, PyObject *partial, PyObject **what,
                        Py_ssize_t *ndim) {
    Py_ssize_t rank, i, n;
    PyObject *mesh_shape;
    unsigned long long used = 0;
    int out_of_range = 0, twice = 0;
    *ndim = -1;
    if (Py_TYPE(mesh) != Mesh_t)
        return 0;
    mesh_shape = PyObject_GetAttr(mesh, s_shape);
    if (mesh_shape == NULL) {
        PyErr_Clear();
        return 0;
    }
    n = PyTuple_CheckExact(mesh_shape) ? PyTuple_GET_SIZE(mesh_shape) : 0;
    Py_DECREF(mesh_shape);
    if (n < 1 || n > 63)
        return 0;
    *ndim = n; /* spec_problem need not read it again */
    rank = PyTuple_GET_SIZE(shape);
    if (PyTuple_GET_SIZE(dm) != rank)
        return 0;
    /* A mesh dim out of range anywhere is the problem before a mesh dim used twice (the order of
     * _first_problem), and both come after the sizes (a negative one, -1 the unknown size included,
     * is left to the reference): the loop goes on to
     * the end and names the problem, so the build does not hand the spec to spec_problem. */
    for (i = 0; i < rank; i++) {
        long m;
        PyObject *entry;
        if (small_index(PyTuple_GET_ITEM(shape, i), LONG_MAX, 0) < 0)
            return 0;
        entry = PyTuple_GET_ITEM(dm, i);
        if (PyTuple_CheckExact(entry)) { /* a co-shard in normal form: two or more distinct mesh dims */
            Py_ssize_t k, members = PyTuple_GET_SIZE(entry);
            if (members < 2)
                return 0;
            for (k = 0; k < members; k++) {
                PyObject *member = PyTuple_GET_ITEM(entry, k);
                if (!PyLong_CheckExact(member))
                    return 0;
                m = small_index(member, (long)n, 0);
                if (m < 0)
                    out_of_range = 1;
                else if (used & (1ULL << m))
                    twice = 1;
                else
                    used |= 1ULL << m;
            }
            continue;
        }
        if (!PyLong_CheckExact(entry))
            return 0;
        m = small_index(entry, (long)n, 1);
        if (m == -2)
            out_of_range = 1;
        else if (m >= 0) {
            if (used & (1ULL << m))
                twice = 1;
            used |= 1ULL << m;
        }
    }
    if (out_of_range || twice) {
        *what = out_of_range ? s_mesh_dim : s_duplicate;
        return 0;
    }
    if (PySet_GET_SIZE(partial) > 0) {
        PyObject *p, *found = NULL;
        int known = 1;
        long bad_p = 0;
#ifdef HAVE_SET_NEXT
        Py_ssize_t pos = 0;
        Py_hash_t hash;
        while (_PySet_NextEntry(partial, &pos, &p, &hash)) { /* p borrowed; no iterator made */
#else
        PyObject *it = PyObject_GetIter(partial);
        if (it == NULL)
            return -1;
        while ((p = PyIter_Next(it)) != NULL) { /* every item: the smallest bad one names the problem */
#endif
            int overflow = 0;
            long v = PyLong_CheckExact(p) ? PyLong_AsLongAndOverflow(p, &overflow) : (known = 0, 0);
#ifndef HAVE_SET_NEXT
            Py_DECREF(p);
#endif
            if (overflow || (v == -1 && PyErr_Occurred())) {
                PyErr_Clear();
                known = 0;
            }
            if (known && (v < 0 || v >= (long)n || (used & (1ULL << v))) && (found == NULL || v < bad_p)) {
                bad_p = v;
                found = v < 0 || v >= (long)n ? s_partial_range : s_partial_shard;
            }
        }
#ifndef HAVE_SET_NEXT
        Py_DECREF(it);
#endif
        if (PyErr_Occurred())
            return -1;
        if (found == NULL && known)
            return 1;
        if (known)
            *what = found;
        return 0;
    }
    return 1;
}

/* The first problem of a spec in normal form (co-shards included) on an exact ProcessMesh of n dims,
 * as types.DistTensorSpec._first_problem finds it. With `arg` NULL (a spec being built): which one,
 * the interned name (what: "length", "mesh-dim", ...), a new reference, and no text put together.
 * With `arg` (DistTensorSpec.check's argument, an exact str): the message of check's error, worded
 * exactly as _first_problem(arg) words it (every message here is the argument's name followed by text
 * made of the values: digits, brackets, commas, "x", so arg is put in front as it is).
 * Either way NULL with no error set when this code does not judge or word it (a value beyond a C
 * long, a negative size, a text too long: the reference does), NULL with an error on a failure of
 * Python's. Called only for values of the right types that normal_valid did not take. */
/* A message under construction (snprintf was most of an invalid spec's build); `off`: find the
 * problem only (a spec being built needs its name, not its words). */
typedef struct {
    char text[2048];
    size_t len;
    int full; /* set when something did not fit: the reference words that spec */
    int off;
} Text;

static void put(Text *t, const char *s) { /* a C string (PUT, below: a literal) */
    size_t n;
    if (t->off)
        return;
    n = strlen(s);
    if (t->len + n >= sizeof t->text) {
        t->full = 1;
        return;
    }
    memcpy(t->text + t->len, s, n);
    t->len += n;
}

/* n bytes of ASCII text (which may hold NULs: an argument's name is any str); PUT: a literal's */
#define PUT(t, literal) put_ascii((t), (literal), sizeof(literal) - 1)
static void put_ascii(Text *t, const char *s, size_t n) {
    if (t->off)
        return;
    if (t->len + n >= sizeof t->text) {
        t->full = 1;
        return;
    }
    memcpy(t->text + t->len, s, n);
    t->len += n;
}

static void put_long(Text *t, long v) {
    char digits[24];
    int i = sizeof digits - 1;
    unsigned long u = v < 0 ? 0UL - (unsigned long)v : (unsigned long)v;
    if (t->off)
        return;
    digits[i] = '\0';
    do {
        digits[--i] = (char)('0' + u % 10);
        u /= 10;
    } while (u);
    if (v < 0)
        digits[--i] = '-';
    put(t, digits + i);
}

/* `open` a<sep>b... `close` of a tuple of exact ints; -1 when an item is beyond a C long */
static int put_longs(Text *t, PyObject *items, const char *open, const char *sep, const char *close) {
    Py_ssize_t i, n = PyTuple_GET_SIZE(items);
    if (t->off)
        return 0;
    put(t, open);
    for (i = 0; i < n; i++) {
        int overflow = 0;
        long v = PyLong_AsLongAndOverflow(PyTuple_GET_ITEM(items, i), &overflow);
        if (overflow || (v == -1 && PyErr_Occurred())) {
            PyErr_Clear();
            return -1;
        }
        if (i)
            put(t, sep);
        put_long(t, v);
    }
    put(t, close);
    return 0;
}

/* format_mapping(dm): "[0,(1,2),-1]"; -1 when a value is beyond a C long */
static int put_mapping(Text *t, PyObject *dm) {
    Py_ssize_t i, n = PyTuple_GET_SIZE(dm);
    if (t->off)
        return 0;
    PUT(t, "[");
    for (i = 0; i < n; i++) {
        PyObject *entry = PyTuple_GET_ITEM(dm, i);
        if (i)
            PUT(t, ",");
        if (PyTuple_CheckExact(entry)) {
            if (put_longs(t, entry, "(", ",", ")") < 0)
                return -1;
        } else {
            int overflow = 0;
            long v = PyLong_AsLongAndOverflow(entry, &overflow);
            if (overflow || (v == -1 && PyErr_Occurred())) {
                PyErr_Clear();
                return -1;
            }
            put_long(t, v);
        }
    }
    PUT(t, "]");
    return 0;
}

static PyObject *spec_problem(PyObject *shape, PyObject *dm, PyObject *mesh, PyObject *partial, PyObject *arg,
                              Py_ssize_t known_ndim) {
    Text t, mesh_text;
    PyObject *mesh_shape, *text, *out;
    PyObject *what = NULL; /* borrowed: one of the interned names */
    Py_ssize_t rank = PyTuple_GET_SIZE(shape), entries = PyTuple_GET_SIZE(dm), n, i, k;
    unsigned long long used = 0;
    long bad_p = -1;
    t.len = mesh_text.len = 0;
    t.full = mesh_text.full = 0;
    t.off = mesh_text.off = arg == NULL;
    if (Py_TYPE(mesh) != Mesh_t)
        return NULL;
    for (i = 0; i < rank; i++)
        if (small_index(PyTuple_GET_ITEM(shape, i), LONG_MAX, 0) < 0)
            return NULL; /* a negative size (the reference's: -1 taken, others raised) or one beyond a C long */
    if (arg == NULL && known_ndim > 0) { /* a spec being built: normal_valid read the mesh's rank */
        n = known_ndim;
    } else {
        mesh_shape = PyObject_GetAttr(mesh, s_shape);
        if (mesh_shape == NULL) {
            PyErr_Clear();
            return NULL;
        }
        n = PyTuple_CheckExact(mesh_shape) ? PyTuple_GET_SIZE(mesh_shape) : 0;
        i = n < 1 || n > 63 ? -1 : put_longs(&mesh_text, mesh_shape, "", "x", ""); /* str(mesh): "2x3" */
        Py_DECREF(mesh_shape);
        if (i < 0)
            return NULL;
    }
    mesh_text.text[mesh_text.len] = '\0';
    if (arg != NULL && PyUnicode_IS_ASCII(arg)) /* "{arg}" formatted: the name first, as it is */
        put_ascii(&t, (const char *)PyUnicode_DATA(arg), (size_t)PyUnicode_GET_LENGTH(arg));
    if (entries != rank) {
        what = s_length;
        PUT(&t, ": dims_mapping ");
        if (put_mapping(&t, dm) < 0)
            return NULL;
        PUT(&t, " has ");
        put_long(&t, (long)entries);
        PUT(&t, " entries but the shape ");
        if (put_longs(&t, shape, "[", ", ", "]") < 0)
            return NULL;
        PUT(&t, " has rank ");
        put_long(&t, (long)rank);
        PUT(&t, "; give one entry per tensor axis");
        goto done;
    }
    for (i = 0; i < entries; i++) { /* each member in range (a co-shard's in 0..n-1), in order */
        PyObject *entry = PyTuple_GET_ITEM(dm, i);
        int co = PyTuple_CheckExact(entry);
        Py_ssize_t members = co ? PyTuple_GET_SIZE(entry) : 1;
        for (k = 0; k < members; k++) {
            int overflow = 0;
            long m = PyLong_AsLongAndOverflow(co ? PyTuple_GET_ITEM(entry, k) : entry, &overflow);
            if (overflow || (m == -1 && PyErr_Occurred())) {
                PyErr_Clear();
                return NULL; /* beyond a C long: the reference words it */
            }
            if (m < -1 || m >= (long)n || (m == -1 && co)) {
                what = s_mesh_dim;
                PUT(&t, ": dims_mapping ");
                put_mapping(&t, dm);
                if (co) {
                    PUT(&t, " uses co-shard ");
                    put_longs(&t, entry, "(", ",", ")");
                } else {
                    PUT(&t, " uses mesh dim ");
                    put_long(&t, m);
                }
                PUT(&t, ", but the mesh ");
                put(&t, mesh_text.text);
                PUT(&t, " has dims 0..");
                put_long(&t, (long)n - 1);
                PUT(&t, "; use -1 (replicated), a dim in that range, or a tuple of distinct dims in that range "
                        "(co-shard)");
                goto done;
            }
        }
    }
    for (i = 0; i < entries; i++) { /* every member is in -1..n-1 here (-1 only outside a co-shard) */
        PyObject *entry = PyTuple_GET_ITEM(dm, i);
        int co = PyTuple_CheckExact(entry);
        Py_ssize_t members = co ? PyTuple_GET_SIZE(entry) : 1;
        for (k = 0; k < members; k++) {
            long m = PyLong_AsLong(co ? PyTuple_GET_ITEM(entry, k) : entry);
            if (m == -1)
                continue;
            if (used & (1ULL << m)) {
                what = s_duplicate;
                PUT(&t, ": dims_mapping ");
                put_mapping(&t, dm);
                PUT(&t, " splits along the same mesh dim twice; each mesh dim may shard at most one axis, once");
                goto done;
            }
            used |= 1ULL << m;
        }
    }
    /* the smallest partial dim that is outside the mesh or also shards (the reference goes through
     * them sorted and stops at the first): no list to sort, one pass over the set */
    if (PySet_GET_SIZE(partial) > 0) {
        PyObject *it = PyObject_GetIter(partial), *item;
        if (it == NULL)
            return NULL;
        while ((item = PyIter_Next(it)) != NULL) {
            int overflow = 0;
            long p = PyLong_AsLongAndOverflow(item, &overflow);
            Py_DECREF(item);
            if (overflow || (p == -1 && PyErr_Occurred())) {
                Py_DECREF(it);
                PyErr_Clear();
                return NULL; /* beyond a C long: the reference words it */
            }
            if ((p < 0 || p >= (long)n || (used & (1ULL << p))) && (what == NULL || p < bad_p)) {
                bad_p = p;
                what = p < 0 || p >= (long)n ? s_partial_range : s_partial_shard;
            }
        }
        Py_DECREF(it);
        if (PyErr_Occurred())
            return NULL;
        if (what == s_partial_range) {
            PUT(&t, ": partial dim ");
            put_long(&t, bad_p);
            PUT(&t, " is outside the mesh ");
            put(&t, mesh_text.text);
            PUT(&t, " (dims 0..");
            put_long(&t, (long)n - 1);
            PUT(&t, ")");
        } else if (what == s_partial_shard) {
            PUT(&t, ": mesh dim ");
            put_long(&t, bad_p);
            PUT(&t, " both shards an axis and is partial; a mesh dim is either Shard or Partial");
        }
    }
done:
    if (what == NULL || t.full || mesh_text.full) /* no problem found (normal_valid took such values), or too long */
        return NULL;
    if (arg == NULL)
        return Py_NewRef(what);
    text = PyUnicode_DecodeASCII(t.text, (Py_ssize_t)t.len, NULL);
    if (text == NULL || PyUnicode_IS_ASCII(arg))
        return text; /* the name is in it */
    out = PyUnicode_Concat(arg, text); /* "{arg}" + text, formatted: a name of other characters */
    Py_DECREF(text);
    return out;
}

/* func(self, *args, **kwargs) for a method's vectorcall arguments (a stand-in handing its call to the
 * Python reference it stands in for) */
static PyObject *call_with_self(PyObject *func, PyObject *self, PyObject *const *args, Py_ssize_t nargs,
                                PyObject *kwnames) {
    Py_ssize_t nkw = kwnames == NULL ? 0 : PyTuple_GET_SIZE(kwnames), k;
    PyObject *small[8], **full = small, *res;
    if (nargs + nkw + 1 > 8) {
        full = PyMem_Malloc((nargs + nkw + 1) * sizeof(PyObject *));
        if (full == NULL)
            return PyErr_NoMemory();
    }
    full[0] = self;
    for (k = 0; k < nargs + nkw; k++)
        full[k + 1] = args[k];
    res = PyObject_Vectorcall(func, full, nargs + 1, kwnames);
    if (full != small)
        PyMem_Free(full);
    return res;
}

/* The parameter number (0 shape, 1 dims_mapping, 2 mesh, 3 partial_dims) of a keyword, -1 for another. */
static int spec_param(PyObject *name) {
    PyObject *names[4] = {s_shape, s_dims_mapping, s_mesh, s_partial_dims};
    int k;
    for (k = 0; k < 4; k++)
        if (name == names[k])
            return k;
    for (k = 0; k < 4; k++)
        if (PyUnicode_Check(name) && PyUnicode_Compare(name, names[k]) == 0)
            return k;
    return -1;
}

static PyObject *spec_init(PyObject *self, PyObject *const *args, Py_ssize_t nargsf, PyObject *kwnames) {
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf), nkw = kwnames == NULL ? 0 : PyTuple_GET_SIZE(kwnames), k;
    PyObject *given[4] = {NULL, NULL, NULL, NULL}, *shape = NULL, *dm = NULL, *partial = NULL, *res, *found = NULL;
    Py_ssize_t ndim;
    int coshard = 0, ok;
    /* the call's arguments by parameter: positional or keyword, each given once, the first three given;
     * any other call form the reference takes or rejects */
    if (nargs > 4)
        goto reference;
    for (k = 0; k < nargs; k++)
        given[k] = args[k];
    for (k = 0; k < nkw; k++) {
        int param = spec_param(PyTuple_GET_ITEM(kwnames, k));
        if (param < 0 || given[param] != NULL)
            goto reference;
        given[param] = args[nargs + k];
    }
    if (given[0] == NULL || given[1] == NULL || given[2] == NULL)
        goto reference;
    /* each value in its normal form; a value this code does not convert, the reference converts or names */
    shape = int_tuple(given[0]);
    if (shape == NULL)
        goto reference_or_error;
    dm = mapping_tuple(given[1], &coshard);
    if (dm == NULL)
        goto reference_or_error;
    partial = given[3] == NULL ? Py_NewRef(empty_frozenset) : partial_set(given[3]);
    if (partial == NULL)
        goto reference_or_error;
    ok = normal_valid(shape, dm, given[2], partial, &found, &ndim);
    if (ok < 0)
        goto error;
    if (ok) {
        set_slot(self, off_shape, shape);
        set_slot(self, off_dm, dm);
        set_slot(self, off_mesh, given[2]);
        set_slot(self, off_partial, partial);
        set_slot(self, off_problem, Py_None);
        set_slot(self, off_coshard, coshard ? Py_True : Py_False);
        set_slot(self, off_valid, Py_True);
        Py_DECREF(shape);
        Py_DECREF(dm);
        Py_DECREF(partial);
        Py_RETURN_NONE;
    }
    /* values of the right types that are not a valid spec: worded here on an exact ProcessMesh, else
     * (a mesh of another type or none, a negative size, a value beyond a C long) the reference judges
     * them and names the problem; given the converted values, it skips the conversion */
    {
        PyObject *problem = found != NULL ? Py_NewRef(found) /* its name: check words the message */
                                          : spec_problem(shape, dm, given[2], partial, NULL, ndim);
        if (problem != NULL) {
            set_slot(self, off_shape, shape);
            set_slot(self, off_dm, dm);
            set_slot(self, off_mesh, given[2]);
            set_slot(self, off_partial, partial);
            set_slot(self, off_problem, problem);
            set_slot(self, off_coshard, coshard ? Py_True : Py_False);
            set_slot(self, off_valid, Py_False);
            Py_DECREF(problem);
            Py_DECREF(shape);
            Py_DECREF(dm);
            Py_DECREF(partial);
            Py_RETURN_NONE;
        }
        if (PyErr_Occurred())
            goto error;
    }
    {
        PyObject *call[5] = {self, shape, dm, given[2], partial};
        res = PyObject_Vectorcall(pure_init, call, 5, NULL);
    }
    Py_DECREF(shape);
    Py_DECREF(dm);
    Py_DECREF(partial);
    return res;
reference_or_error:
    if (PyErr_Occurred())
        goto error;
    Py_XDECREF(shape);
    Py_XDECREF(dm);
reference:
    return call_with_self(pure_init, self, args, nargs, kwnames); /* the reference, as called */
error:
    Py_XDECREF(shape);
    Py_XDECREF(dm);
    Py_XDECREF(partial);
    return NULL;
}

/* DistTensorSpec.check(arg): see types (the reference, REFERENCES["DistTensorSpec.check"]). A valid spec
 * returns at once; a spec with a problem raises an error that reads as the reference's (an
 * InvalidSpecError whose args are (message,) and whose instance dict holds its kind), worded when
 * first read (refusal_type, below). Any other call form (a keyword, a name that is not an exact str),
 * a subclass, or a problem name of another type goes to the reference. */
static PyObject *pure_check, *invalid_spec_error, *s_kind;
static PyObject *spec_call(PyObject *type, PyObject *const *args, size_t nargsf, PyObject *kwnames);

/* "invalid-spec:{arg}:{problem}", the error's kind (put together here: PyUnicode_FromFormat parses
 * its format on every call, a third of a refusal's wording) */
static PyObject *error_kind(PyObject *arg, PyObject *problem) {
    Text t;
    t.len = 0;
    t.full = t.off = 0;
    if (!PyUnicode_IS_ASCII(arg) || !PyUnicode_IS_ASCII(problem))
        return PyUnicode_FromFormat("invalid-spec:%U:%U", arg, problem);
    PUT(&t, "invalid-spec:");
    put_ascii(&t, (const char *)PyUnicode_DATA(arg), (size_t)PyUnicode_GET_LENGTH(arg));
    PUT(&t, ":");
    put_ascii(&t, (const char *)PyUnicode_DATA(problem), (size_t)PyUnicode_GET_LENGTH(problem));
    if (t.full)
        return PyUnicode_FromFormat("invalid-spec:%U:%U", arg, problem);
    return PyUnicode_DecodeASCII(t.text, (Py_ssize_t)t.len, NULL);
}

/* The error check raises: a class made here (configure_types) as a subclass of InvalidSpecError that
 * adds nothing to its layout, named as it (module paddle_spmd_port.errors, qualname InvalidSpecError,
 * so tracebacks, repr and parity's family read the same). Why: most refusals are caught and dropped
 * unread (a sweep counts them, a caller tries the next input), and wording the message and kind and
 * making the instance dict for them cost more than the build and the raise together (3-4.6x the tuple
 * form against 1.5-1.9x); a refusal nobody reads should cost no wording. So an instance made by
 * spec_check holds the raw args (refusal_marker, spec, arg) and words itself on the first read of
 * anything: an attribute (args, kind, __dict__, __class__, __reduce_ex__ for pickling and copying,
 * add_note, ... : tp_getattro), an attribute set (tp_setattro), str or repr. Wording puts the
 * reference's args (message,) and instance dict {"kind": ...} in place (the message by spec_problem,
 * or, where it does not word a spec, the reference's own error's) and turns the object into a plain
 * InvalidSpecError (its class set to it, as `__class__ =` would: the layouts are the same): from then
 * on it is the reference's error in every respect, type() and pickling included. Only type(exc) of a
 * refusal not yet read tells it: this class, a subclass of InvalidSpecError of the same name. The
 * interpreter's own handling (raise, except matching, traceback, __cause__ / __context__) reads no
 * attribute of it. The instance keeps the spec alive until it is read or dropped (specs are
 * immutable: the wording is the same later). */
static PyObject *refusal_type, *refusal_marker;

/* Word a refusal (see above): 0 once `self` is a plain InvalidSpecError, -1 with an error set. */
static int refusal_word(PyObject *self) {
    PyBaseExceptionObject *e = (PyBaseExceptionObject *)self;
    PyObject *raw = e->args, *spec, *arg, *msg = NULL, *kind = NULL, *dict = NULL, *worded;
    int out = -1;
    if (Py_TYPE(self) != (PyTypeObject *)refusal_type)
        return 0;
    if (raw == NULL || !PyTuple_CheckExact(raw) || PyTuple_GET_SIZE(raw) != 3 ||
        PyTuple_GET_ITEM(raw, 0) != refusal_marker) {
        raw = NULL; /* made another way (type(exc)(message, kind=...)): worded as it was made */
        goto plain;
    }
    Py_INCREF(raw);
    spec = PyTuple_GET_ITEM(raw, 1), arg = PyTuple_GET_ITEM(raw, 2);
    if (Py_TYPE(spec) == Spec_t) {
        PyObject *shape = SLOT(spec, off_shape), *dm = SLOT(spec, off_dm), *mesh = SLOT(spec, off_mesh),
                 *partial = SLOT(spec, off_partial), *problem = SLOT(spec, off_problem);
        if (shape != NULL && dm != NULL && mesh != NULL && partial != NULL && problem != NULL &&
            PyTuple_CheckExact(shape) && PyTuple_CheckExact(dm) && PyFrozenSet_CheckExact(partial) &&
            PyUnicode_CheckExact(problem)) {
            msg = spec_problem(shape, dm, mesh, partial, arg, -1);
            if (msg == NULL && PyErr_Occurred())
                goto done;
            if (msg != NULL && (kind = error_kind(arg, problem)) == NULL)
                goto done;
        }
    }
    if (msg == NULL) { /* not worded here: the reference's error for the same spec and name, as it is */
        PyObject *exc, *res = PyObject_CallFunctionObjArgs(pure_check, spec, arg, NULL);
        if (res != NULL) {
            Py_DECREF(res);
            PyErr_SetString(PyExc_RuntimeError, "_speedups: DistTensorSpec.check's reference found no problem");
            goto done;
        }
        {
            PyObject *type, *tb;
            PyErr_Fetch(&type, &exc, &tb);
            PyErr_NormalizeException(&type, &exc, &tb);
            if (exc == NULL || Py_TYPE(exc) != (PyTypeObject *)invalid_spec_error) { /* (not its error: as raised) */
                PyErr_Restore(type, exc, tb);
                goto done;
            }
            Py_XDECREF(type);
            Py_XDECREF(tb);
        }
        worded = Py_XNewRef(((PyBaseExceptionObject *)exc)->args);
        dict = ((PyBaseExceptionObject *)exc)->dict == NULL ? PyDict_New()
                                                            : PyDict_Copy(((PyBaseExceptionObject *)exc)->dict);
        Py_DECREF(exc);
        if (worded == NULL || dict == NULL) {
            Py_XDECREF(worded);
            goto done;
        }
    } else {
        worded = PyTuple_Pack(1, msg);
        dict = worded == NULL ? NULL : PyDict_New();
        if (dict == NULL || PyDict_SetItem(dict, s_kind, kind) < 0) {
            Py_XDECREF(worded);
            goto done;
        }
    }
    if (Py_TYPE(self) != (PyTypeObject *)refusal_type || e->args != raw) { /* worded meanwhile (re-entered) */
        Py_DECREF(worded);
        out = 0;
        goto done;
    }
    Py_XSETREF(e->args, worded);
    Py_XSETREF(e->dict, Py_NewRef(dict)); /* nothing read or set it: every access words first */
plain: /* the class a plain error has (object.__class__'s assignment: same layout, checked at configure) */
    Py_INCREF(invalid_spec_error);
    Py_SET_TYPE(self, (PyTypeObject *)invalid_spec_error);
    Py_DECREF(refusal_type);
    out = 0;
done:
    Py_XDECREF(raw);
    Py_XDECREF(msg);
    Py_XDECREF(kind);
    Py_XDECREF(dict);
    return out;
}

static PyObject *refusal_getattro(PyObject *self, PyObject *name) {
    if (refusal_word(self) < 0)
        return NULL;
    return PyObject_GetAttr(self, name); /* the plain error's */
}

static int refusal_setattro(PyObject *self, PyObject *name, PyObject *value) {
    if (refusal_word(self) < 0)
        return -1;
    return PyObject_SetAttr(self, name, value);
}

static PyObject *refusal_str(PyObject *self) {
    return refusal_word(self) < 0 ? NULL : PyObject_Str(self);
}

static PyObject *refusal_repr(PyObject *self) {
    return refusal_word(self) < 0 ? NULL : PyObject_Repr(self);
}

/* A free list of one: an unread refusal is made and dropped at once (the caller catches it and goes
 * on), and allocating the exception object and freeing it again is a third of such a refusal. So the
 * last refusal dropped unread is kept, every field cleared (args (), no traceback, context, cause,
 * notes or dict: nothing it pinned stays alive; its weak references told it died first, as at any
 * death), and spec_check raises it again instead of a new one. Only an object whose last reference
 * went is kept: nobody can see it raised again. Anything else is freed as the plain InvalidSpecError
 * it is made first (its class set, then that class's dealloc, which is CPython's own for a Python
 * class: it cannot be called for this class, whose dealloc is this one). */
static PyObject *spare_refusal; /* the kept one (its refcount 1: this reference), or NULL */

static void refusal_free(PyObject *self) { /* self: refcount 0 */
    PyTypeObject *own = Py_TYPE(self);
    Py_INCREF(invalid_spec_error);
    Py_SET_TYPE(self, (PyTypeObject *)invalid_spec_error);
    Py_DECREF(own);
    ((PyTypeObject *)invalid_spec_error)->tp_dealloc(self);
}

static void refusal_dealloc(PyObject *self) {
    PyBaseExceptionObject *e = (PyBaseExceptionObject *)self;
    if (spare_refusal != NULL || empty_tuple == NULL) {
        refusal_free(self);
        return;
    }
    if (Py_TYPE(self)->tp_weaklistoffset > 0 && *(PyObject **)((char *)self + Py_TYPE(self)->tp_weaklistoffset) != NULL)
        PyObject_ClearWeakRefs(self); /* (refcount 0, as it needs) */
    Py_SET_REFCNT(self, 1); /* alive again while its fields go (their deallocs may run any code) */
    Py_CLEAR(e->dict);
#if PY_VERSION_HEX >= 0x030B0000
    Py_CLEAR(e->notes);
#endif
    Py_CLEAR(e->traceback);
    Py_CLEAR(e->context);
    Py_CLEAR(e->cause);
    e->suppress_context = 0;
    Py_XSETREF(e->args, Py_NewRef(empty_tuple));
    if (Py_REFCNT(self) != 1) { /* taken by code run above (gc.get_objects()): it lives on, unread */
        Py_DECREF(self);
        return;
    }
    if (spare_refusal == NULL && Py_TYPE(self) == (PyTypeObject *)refusal_type) {
        PyObject_GC_UnTrack(self); /* out of the collector's sight (gc.get_objects) while kept */
        spare_refusal = self;
        return;
    }
    Py_SET_REFCNT(self, 0); /* another one was kept meanwhile (code run above dropped it) */
    refusal_free(self);
}

static PyType_Slot refusal_slots[] = {
    {Py_tp_dealloc, refusal_dealloc}, {Py_tp_getattro, refusal_getattro}, {Py_tp_setattro, refusal_setattro}, {Py_tp_str, refusal_str},
    {Py_tp_repr, refusal_repr},
    {Py_tp_doc, "The InvalidSpecError DistTensorSpec.check raises, worded on first read (see _speedups.c)."},
    {0, NULL}};
static PyType_Spec refusal_spec = {"paddle_spmd_port.errors.InvalidSpecError", 0, 0, Py_TPFLAGS_DEFAULT,
                                   refusal_slots};

static PyObject *spec_check(PyObject *self, PyObject *const *args, Py_ssize_t nargsf, PyObject *kwnames) {
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    PyObject *problem, *raw, *exc;
    PyTypeObject *cls = (PyTypeObject *)refusal_type;
    if (kwnames != NULL || nargs != 1 || Py_TYPE(self) != Spec_t || !PyUnicode_CheckExact(args[0]))
        goto reference;
    problem = SLOT(self, off_problem);
    if (problem == Py_None)
        Py_RETURN_NONE;
    if (problem == NULL || !PyUnicode_CheckExact(problem))
        goto reference;
    raw = PyTuple_New(3);
    if (raw == NULL)
        return NULL;
    PyTuple_SET_ITEM(raw, 0, Py_NewRef(refusal_marker));
    PyTuple_SET_ITEM(raw, 1, Py_NewRef(self));
    PyTuple_SET_ITEM(raw, 2, Py_NewRef(args[0]));
    if (spare_refusal != NULL) { /* the kept one (see refusal_dealloc), given raw as its args */
        exc = spare_refusal;
        spare_refusal = NULL;
        Py_XSETREF(((PyBaseExceptionObject *)exc)->args, raw);
        if (!PyObject_GC_IsTracked(exc))
            PyObject_GC_Track(exc);
    } else {
        exc = cls->tp_new(cls, raw, NULL); /* BaseException's new: args = raw; SpmdError.__init__ is the wording's */
        Py_DECREF(raw);
    }
    if (exc != NULL) {
        PyErr_SetObject((PyObject *)cls, exc);
        Py_DECREF(exc);
    }
    return NULL;
reference:
    return call_with_self(pure_check, self, args, nargs, kwnames);
}

static PyMethodDef spec_check_def = {"check", (PyCFunction)(void (*)(void))spec_check, METH_FASTCALL | METH_KEYWORDS,
                                     "check($self, arg)\n--\n\nRaise InvalidSpecError naming arg when the spec has a "
                                     "problem (the C stand-in of types.DistTensorSpec.check)."};

static PyMethodDef spec_init_def = {"__init__", (PyCFunction)(void (*)(void))spec_init,
                                    METH_FASTCALL | METH_KEYWORDS,
                                    "Build a spec: the common valid spec here, anything else by the Python DistTensorSpec.__init__."};

/* The class call DistTensorSpec(...) itself, installed as the class's vectorcall (see
 * stand_in): while DistTensorSpec.__init__ is this module's spec_init and __new__ is object's,
 * it allocates the spec and runs spec_init on the call's arguments as they come, which is what
 * type.__call__ would do after packing them into a tuple and a dict (the keyword form paid for that
 * dict). Anything else (a subclass, a patched __init__ or __new__) takes type.__call__. */
static PyObject *spec_init_descr; /* the descriptor stand_in installed as DistTensorSpec.__init__ */

static PyObject *spec_call(PyObject *type, PyObject *const *args, size_t nargsf, PyObject *kwnames) {
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf), nkw = kwnames == NULL ? 0 : PyTuple_GET_SIZE(kwnames), k;
    PyObject *self, *res, *init, *argtuple, *kwargs = NULL;
    if (type == (PyObject *)Spec_t && Spec_t->tp_new == PyBaseObject_Type.tp_new &&
        (init = PyDict_GetItemWithError(Spec_t->tp_dict, s_init)) == spec_init_descr && init != NULL) {
        self = Spec_t->tp_alloc(Spec_t, 0);
        if (self == NULL)
            return NULL;
        res = spec_init(self, args, (Py_ssize_t)nargsf, kwnames);
        if (res == NULL) {
            Py_DECREF(self);
            return NULL;
        }
        if (res != Py_None) {
            PyErr_Format(PyExc_TypeError, "__init__() should return None, not '%.200s'", Py_TYPE(res)->tp_name);
            Py_DECREF(res);
            Py_DECREF(self);
            return NULL;
        }
        Py_DECREF(res);
        return self;
    }
    if (PyErr_Occurred())
        return NULL;
    argtuple = PyTuple_New(nargs);
    if (argtuple == NULL)
        return NULL;
    for (k = 0; k < nargs; k++)
        PyTuple_SET_ITEM(argtuple, k, Py_NewRef(args[k]));
    if (nkw > 0) {
        kwargs = PyDict_New();
        for (k = 0; kwargs != NULL && k < nkw; k++)
            if (PyDict_SetItem(kwargs, PyTuple_GET_ITEM(kwnames, k), args[nargs + k]) < 0)
                Py_CLEAR(kwargs);
        if (kwargs == NULL) {
            Py_DECREF(argtuple);
            return NULL;
        }
    }
    res = PyType_Type.tp_call(type, argtuple, kwargs);
    Py_DECREF(argtuple);
    Py_XDECREF(kwargs);
    return res;
}

static PyObject *new_object(PyTypeObject *type) {
    return type->tp_alloc(type, 0);
}

static PyObject *attr_make(PyObject *module, PyObject *const *args, Py_ssize_t nargsf, PyObject *kwnames) {
    PyObject *dm, *partial, *mesh, *hash, *key, *attr, *fresh;
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    (void)module;
    if (kwnames != NULL || nargs != 3) /* keywords, or a wrong call: the reference takes or rejects it */
        return PyObject_Vectorcall(pure_attr_make, args, nargs, kwnames);
    dm = args[0], partial = args[1], mesh = args[2];
    if (mesh == Py_None) {
        hash = Py_NewRef(Py_None);
    } else {
        hash = PyObject_GetAttr(mesh, s_hash);
        if (hash == NULL)
            return NULL;
    }
    key = PyTuple_Pack(3, dm, partial, hash);
    Py_DECREF(hash);
    if (key == NULL)
        return NULL;
    attr = PyDict_GetItemWithError(interned, key);
    if (attr == NULL && PyErr_Occurred())
        goto fail;
    if (attr != NULL) {
        PyObject *held = Py_TYPE(attr) == Attr_t ? SLOT(attr, off_attr_mesh) : NULL;
        int same;
        if (held == NULL) { /* not one of ours: the reference reads it */
            Py_DECREF(key);
            return PyObject_Vectorcall(pure_attr_make, args, nargs, NULL);
        }
        same = held == mesh ? 1 : PyObject_RichCompareBool(held, mesh, Py_EQ);
        if (same < 0)
            goto fail;
        if (same) {
            Py_DECREF(key);
            return Py_NewRef(attr);
        }
        Py_DECREF(key);  /* the hash's key is taken by another mesh: key by the mesh itself */
        key = PyTuple_Pack(3, dm, partial, mesh);
        if (key == NULL)
            return NULL;
        attr = PyDict_GetItemWithError(interned, key);
        if (attr != NULL) {
            Py_DECREF(key);
            return Py_NewRef(attr);
        }
        if (PyErr_Occurred())
            goto fail;
    }
    fresh = new_object(Attr_t);
    if (fresh == NULL)
        goto fail;
    set_slot(fresh, off_attr_dm, dm);
    set_slot(fresh, off_attr_partial, partial);
    set_slot(fresh, off_attr_mesh, mesh);
    if (PyDict_GET_SIZE(interned) > interned_limit)
        PyDict_Clear(interned);
    if (PyDict_SetItem(interned, key, fresh) < 0) {
        Py_DECREF(fresh);
        goto fail;
    }
    Py_DECREF(key);
    return fresh;
fail:
    Py_DECREF(key);
    return NULL;
}

static PyObject *result_make(PyObject *module, PyObject *const *args, Py_ssize_t nargsf, PyObject *kwnames) {
    PyObject *res;
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    (void)module;
    /* make(ins, outs) or make(inputs=ins, outputs=outs); any other form, the reference */
    if (!(kwnames == NULL && nargs == 2) &&
        !(kwnames != NULL && nargs == 0 && PyTuple_GET_SIZE(kwnames) == 2 &&
          PyTuple_GET_ITEM(kwnames, 0) == s_inputs && PyTuple_GET_ITEM(kwnames, 1) == s_outputs))
        return PyObject_Vectorcall(pure_result_make, args, nargs, kwnames);
    res = new_object(Result_t);
    if (res == NULL)
        return NULL;
    set_slot(res, off_inputs, args[0]);
    set_slot(res, off_outputs, args[1]);
    return res;
}

static PyObject *rule_input(PyObject *name, PyObject *ndim, PyObject *dm, PyObject *partial, PyObject *mesh,
                            PyObject *missing) {
    PyObject *t = RuleInput_t->tp_alloc(RuleInput_t, 6);
    if (t == NULL)
        return NULL;
    PyTuple_SET_ITEM(t, 0, Py_NewRef(name));
    PyTuple_SET_ITEM(t, 1, ndim); /* stolen */
    PyTuple_SET_ITEM(t, 2, Py_NewRef(dm));
    PyTuple_SET_ITEM(t, 3, Py_NewRef(partial));
    PyTuple_SET_ITEM(t, 4, Py_NewRef(mesh));
    PyTuple_SET_ITEM(t, 5, Py_NewRef(missing));
    return t;
}

/* What a rule reads of a co-sharded mapping, as ops.kit.tensor.getter_mapping (the reference) works it
 * out: per co-shard the member of the largest mesh size, the first listed among equal sizes, a
 * member outside the mesh counting as size 0; every other entry as it is. On an exact ProcessMesh
 * whose shape is a tuple of exact ints within a C long, and a mapping of exact ints and tuples of
 * them; anything else NULL with no error set (the reference decides). Every co-shard is worked out
 * here: a co-sharded input then costs its rule no Python call. */
static PyObject *kept_mapping(PyObject *dm, PyObject *mesh) {
    PyObject *mesh_shape, *out;
    Py_ssize_t i, k, n, nd;
    if (Py_TYPE(mesh) != Mesh_t || !PyTuple_CheckExact(dm))
        return NULL;
    mesh_shape = PyObject_GetAttr(mesh, s_shape);
    if (mesh_shape == NULL) {
        PyErr_Clear();
        return NULL;
    }
    if (!PyTuple_CheckExact(mesh_shape)) {
        Py_DECREF(mesh_shape);
        return NULL;
    }
    nd = PyTuple_GET_SIZE(mesh_shape);
    n = PyTuple_GET_SIZE(dm);
    out = PyTuple_New(n);
    if (out == NULL) {
        Py_DECREF(mesh_shape);
        return NULL;
    }
    for (i = 0; i < n; i++) {
        PyObject *entry = PyTuple_GET_ITEM(dm, i), *best = NULL;
        long best_size = -1;
        if (PyLong_CheckExact(entry)) {
            PyTuple_SET_ITEM(out, i, Py_NewRef(entry));
            continue;
        }
        if (!PyTuple_CheckExact(entry) || PyTuple_GET_SIZE(entry) == 0)
            goto reference;
        for (k = 0; k < PyTuple_GET_SIZE(entry); k++) {
            PyObject *member = PyTuple_GET_ITEM(entry, k);
            int overflow = 0;
            long m, size = 0;
            if (!PyLong_CheckExact(member))
                goto reference;
            m = PyLong_AsLongAndOverflow(member, &overflow);
            if (overflow || (m == -1 && PyErr_Occurred()))
                goto reference;
            if (m >= 0 && m < (long)nd) {
                PyObject *dim = PyTuple_GET_ITEM(mesh_shape, m);
                if (!PyLong_CheckExact(dim))
                    goto reference;
                size = PyLong_AsLongAndOverflow(dim, &overflow);
                if (overflow || (size == -1 && PyErr_Occurred()))
                    goto reference;
            }
            if (size > best_size) { /* strictly: the first of equal sizes stays */
                best = member;
                best_size = size;
            }
        }
        PyTuple_SET_ITEM(out, i, Py_NewRef(best));
    }
    Py_DECREF(mesh_shape);
    return out;
reference:
    PyErr_Clear();
    Py_DECREF(mesh_shape);
    Py_DECREF(out);
    return NULL;
}

/* valid_inputs(specs, names): see ops.kit.tensor._valid_inputs (the reference). */
static PyObject *valid_inputs(PyObject *module, PyObject *const *args, Py_ssize_t nargsf, PyObject *kwnames) {
    PyObject *specs, *names, *out = NULL;
    Py_ssize_t i, n, nargs = PyVectorcall_NARGS(nargsf);
    (void)module;
    /* the usual call: a tuple or list of specs, as many (name, optional) tuples; anything else, the reference */
    if (kwnames != NULL || nargs != 2 || !(PyTuple_CheckExact(args[0]) || PyList_CheckExact(args[0])) ||
        !(PyTuple_CheckExact(args[1]) || PyList_CheckExact(args[1])) ||
        PySequence_Fast_GET_SIZE(args[1]) < PySequence_Fast_GET_SIZE(args[0]))
        return PyObject_Vectorcall(pure_valid_inputs, args, nargs, kwnames);
    specs = Py_NewRef(args[0]);
    names = Py_NewRef(args[1]);
    n = PySequence_Fast_GET_SIZE(specs);
    for (i = 0; i < n; i++) {
        PyObject *entry = PySequence_Fast_GET_ITEM(names, i);
        if (!PyTuple_CheckExact(entry) || PyTuple_GET_SIZE(entry) != 2) {
            out = PyObject_Vectorcall(pure_valid_inputs, args, nargs, NULL);
            goto done;
        }
    }
    out = PyList_New(n);
    if (out == NULL)
        goto done;
    for (i = 0; i < n; i++) {
        PyObject *spec = PySequence_Fast_GET_ITEM(specs, i), *entry = PySequence_Fast_GET_ITEM(names, i);
        PyObject *name, *item;
        name = PyTuple_GET_ITEM(entry, 0);
        if (Py_TYPE(spec) == Spec_t) {
            PyObject *valid = SLOT(spec, off_valid), *coshard = SLOT(spec, off_coshard), *shape = SLOT(spec, off_shape);
            PyObject *dm = SLOT(spec, off_dm), *partial = SLOT(spec, off_partial), *mesh = SLOT(spec, off_mesh);
            PyObject *ndim;
            Py_ssize_t rank;
            if (valid == NULL || coshard == NULL || shape == NULL || dm == NULL || partial == NULL || mesh == NULL) {
                Py_CLEAR(out); /* a field never set: the reference reads it (and raises) */
                out = PyObject_Vectorcall(pure_valid_inputs, args, nargs, NULL);
                goto done;
            }
            if (valid != Py_True) {
                int truth = PyObject_IsTrue(valid);
                if (truth <= 0) {
                    Py_CLEAR(out);
                    if (truth == 0)
                        out = Py_NewRef(Py_None);
                    goto done;
                }
            }
            rank = PyObject_Length(shape);
            ndim = rank < 0 ? NULL : PyLong_FromSsize_t(rank);
            if (ndim == NULL) {
                Py_CLEAR(out);
                goto done;
            }
            if (coshard == Py_False || (coshard != Py_True && PyObject_IsTrue(coshard) == 0)) {
                item = rule_input(name, ndim, dm, partial, mesh, Py_False);
            } else {
                PyObject *kept = PyErr_Occurred() ? NULL : kept_mapping(dm, mesh);
                if (kept == NULL && !PyErr_Occurred())
                    kept = PyObject_CallFunctionObjArgs(getter_mapping, dm, mesh, NULL);
                item = kept == NULL ? NULL : rule_input(name, ndim, kept, partial, mesh, Py_False);
                if (kept == NULL)
                    Py_DECREF(ndim);
                Py_XDECREF(kept);
            }
            if (item == NULL) {
                Py_CLEAR(out);
                goto done;
            }
        } else if (spec == Py_None) {
            int optional = PyObject_IsTrue(PyTuple_GET_ITEM(entry, 1));
            if (optional <= 0) {
                Py_CLEAR(out);
                if (optional == 0)
                    out = Py_NewRef(Py_None);
                goto done;
            }
            PyObject *call[3] = {Py_None, name, Py_True}, *kw = PyTuple_Pack(1, s_optional);
            item = kw == NULL ? NULL : PyObject_Vectorcall(as_input, call, 2, kw); /* as_input(None, name, optional=True) */
            Py_XDECREF(kw);
            if (item == NULL) {
                Py_CLEAR(out);
                goto done;
            }
        } else {
            Py_CLEAR(out);
            out = Py_NewRef(Py_None);
            goto done;
        }
        PyList_SET_ITEM(out, i, item);
    }
done:
    Py_DECREF(specs);
    Py_DECREF(names);
    return out;
}


/* ---- notation ---------------------------------------------------------------------------------- */
static PyObject *pure_merge, *pure_mapping_for_axes;

#define NO_LETTER (-3) /* letter not recorded yet */

/* merge_shardings(tensors): see notation.merge_shardings (the reference). Done here for ASCII
 * notations and int mesh dims in -1..63 that merge without conflict; anything else (a conflict, a
 * length that differs, other types) is handed to the reference, which raises or merges it. */
static PyObject *merge_shardings(PyObject *module, PyObject *const *args, Py_ssize_t nargsf, PyObject *kwnames) {
    long dim[128];
    unsigned char order[128], claims[128];
    int norder = 0, nclaims = 0, c;
    Py_ssize_t i, n, nargs = PyVectorcall_NARGS(nargsf);
    PyObject *seq, *out;
    (void)module;
    if (kwnames != NULL || nargs != 1 || !(PyList_CheckExact(args[0]) || PyTuple_CheckExact(args[0])))
        return PyObject_Vectorcall(pure_merge, args, nargs, kwnames); /* other forms, iterators */
    seq = Py_NewRef(args[0]);
    for (c = 0; c < 128; c++)
        dim[c] = NO_LETTER;
    n = PySequence_Fast_GET_SIZE(seq);
    for (i = 0; i < n; i++) {
        PyObject *pair = PySequence_Fast_GET_ITEM(seq, i), *axes, *dm;
        Py_ssize_t k, len;
        if (!PyTuple_CheckExact(pair) || PyTuple_GET_SIZE(pair) != 2)
            goto reference;
        axes = PyTuple_GET_ITEM(pair, 0), dm = PyTuple_GET_ITEM(pair, 1);
        if (!PyUnicode_CheckExact(axes) || !PyUnicode_IS_ASCII(axes) || !PyTuple_CheckExact(dm))
            goto reference;
        len = PyTuple_GET_SIZE(dm);
        if (PyUnicode_GET_LENGTH(axes) != len)
            goto reference;
        for (k = 0; k < len; k++) {
            long m = small_index(PyTuple_GET_ITEM(dm, k), 64, 1);
            int letter = PyUnicode_1BYTE_DATA(axes)[k];
            if (m == -2)
                goto reference;
            if (m == -1) {
                if (dim[letter] == NO_LETTER) {
                    dim[letter] = -1;
                    order[norder++] = (unsigned char)letter;
                }
            } else if (dim[letter] == NO_LETTER || dim[letter] == -1) {
                if (dim[letter] == NO_LETTER)
                    order[norder++] = (unsigned char)letter;
                dim[letter] = m;
                claims[nclaims++] = (unsigned char)letter;
            } else if (dim[letter] != m) {
                goto reference; /* two mesh dims for one letter: the reference raises */
            }
        }
    }
    if (nclaims > 1) { /* one mesh dim shards one letter: the first recorded keeps it */
        unsigned long long taken = 0;
        for (c = 0; c < nclaims; c++) {
            long m = dim[claims[c]];
            if (taken & (1ULL << m))
                dim[claims[c]] = -1;
            else
                taken |= 1ULL << m;
        }
    }
    out = PyDict_New();
    for (c = 0; out != NULL && c < norder; c++) {
        PyObject *key = PyUnicode_FromOrdinal(order[c]), *value = PyLong_FromLong(dim[order[c]]);
        if (key == NULL || value == NULL || PyDict_SetItem(out, key, value) < 0)
            Py_CLEAR(out);
        Py_XDECREF(key);
        Py_XDECREF(value);
    }
    Py_DECREF(seq);
    return out;
reference:
    out = PyObject_CallOneArg(pure_merge, seq);
    Py_DECREF(seq);
    return out;
}

/* mapping_for_axes(axes, letter_to_dim): see notation.mapping_for_axes (the reference). */
static PyObject *mapping_for_axes(PyObject *module, PyObject *const *args, Py_ssize_t nargsf, PyObject *kwnames) {
    PyObject *axes, *merged, *out;
    Py_ssize_t k, len, nargs = PyVectorcall_NARGS(nargsf);
    (void)module;
    if (kwnames != NULL || nargs != 2 || !PyUnicode_CheckExact(args[0]) || !PyUnicode_IS_ASCII(args[0]) ||
        !PyDict_CheckExact(args[1]))
        return PyObject_Vectorcall(pure_mapping_for_axes, args, nargs, kwnames);
    axes = args[0], merged = args[1];
    len = PyUnicode_GET_LENGTH(axes);
    out = PyTuple_New(len);
    if (out == NULL)
        return NULL;
    for (k = 0; k < len; k++) {
        int letter = PyUnicode_1BYTE_DATA(axes)[k];
        PyObject *value;
        if (letter == '1') {
            value = PyLong_FromLong(-1);
        } else {
            PyObject *key = PyUnicode_FromOrdinal(letter);
            if (key == NULL) {
                Py_DECREF(out);
                return NULL;
            }
            value = PyDict_GetItemWithError(merged, key);
            Py_DECREF(key);
            if (value == NULL) {
                Py_DECREF(out);
                if (PyErr_Occurred())
                    return NULL;
                return PyObject_Vectorcall(pure_mapping_for_axes, args, nargs, NULL); /* raises as it does */
            }
            Py_INCREF(value);
        }
        PyTuple_SET_ITEM(out, k, value);
    }
    return out;
}

/* ---- RuleInput.attr ---------------------------------------------------------------------------- */
/* RuleInput.attr(dims_mapping, *, keep_partial=False): see ops.kit.tensor.RuleInput._attr (the reference) */
static PyObject *rule_input_attr(PyObject *self, PyObject *const *args, Py_ssize_t nargsf, PyObject *kwnames) {
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    PyObject *mapping, *partial, *call[3], *res;
    int keep = 0;
    if (nargs != 1 || PyTuple_GET_SIZE(self) != 6 ||
        (kwnames != NULL && (PyTuple_GET_SIZE(kwnames) != 1 ||
                             PyUnicode_CompareWithASCIIString(PyTuple_GET_ITEM(kwnames, 0), "keep_partial") != 0))) {
        return call_with_self(pure_rule_attr, self, args, nargs, kwnames); /* other call forms: the reference */
    }
    if (kwnames != NULL) {
        keep = PyObject_IsTrue(args[1]);
        if (keep < 0)
            return NULL;
    }
    mapping = PyTuple_CheckExact(args[0]) ? Py_NewRef(args[0]) : PySequence_Tuple(args[0]);
    if (mapping == NULL)
        return NULL;
    partial = keep ? PyTuple_GET_ITEM(self, 3) : no_partial;
    call[0] = mapping, call[1] = partial, call[2] = PyTuple_GET_ITEM(self, 4);
    res = attr_make(NULL, call, 3, NULL);
    Py_DECREF(mapping);
    return res;
}

static PyMethodDef rule_input_attr_def = {"attr", (PyCFunction)(void (*)(void))rule_input_attr,
                                          METH_FASTCALL | METH_KEYWORDS,
                                          "attr($self, dims_mapping, /, *, keep_partial=False)\n--\n\n"
                                          "A copy of this input's attr with a new dims_mapping (see "
                                          "ops.kit.tensor.RuleInput._attr)."};

/* The offset of slot `name` of `type` (a __slots__ member: an object reference that may be unset);
 * -1 with a TypeError when the class has no such slot (say, a field turned back into a dict entry). */
static int slot_offset(PyTypeObject *type, const char *name, Py_ssize_t *offset) {
    PyObject *descr = PyObject_GetAttrString((PyObject *)type, name);
    int ok;
    if (descr == NULL)
        return -1;
    ok = Py_TYPE(descr) == &PyMemberDescr_Type && ((PyMemberDescrObject *)descr)->d_member->type == T_OBJECT_EX;
    if (ok)
        *offset = ((PyMemberDescrObject *)descr)->d_member->offset;
    Py_DECREF(descr);
    if (!ok) {
        PyErr_Format(PyExc_TypeError, "_speedups: %s.%s is not a slot", type->tp_name, name);
        return -1;
    }
    return 0;
}

static int keep_type(PyObject *obj, PyTypeObject **slot, const char *what) {
    if (!PyType_Check(obj)) {
        PyErr_Format(PyExc_TypeError, "%s must be a class", what);
        return -1;
    }
    Py_XSETREF(*slot, (PyTypeObject *)Py_NewRef(obj));
    return 0;
}

/* configure_types(ProcessMesh, InvalidSpecError, interned, interned_limit): what the stand-ins of the
 * value types read besides their own class (types.py calls it once, before its classes) */
static PyObject *configure_types(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    (void)module;
    if (nargs != 4) {
        PyErr_SetString(PyExc_TypeError, "configure_types() takes 4 arguments");
        return NULL;
    }
    if (keep_type(args[0], &Mesh_t, "ProcessMesh") < 0)
        return NULL;
    if (!PyType_Check(args[1]) || !PyType_IsSubtype((PyTypeObject *)args[1], (PyTypeObject *)PyExc_Exception) ||
        ((PyTypeObject *)args[1])->tp_new == NULL) {
        PyErr_SetString(PyExc_TypeError, "configure_types(): the second argument must be an exception class");
        return NULL;
    }
    if (refusal_type != NULL && args[1] != invalid_spec_error) { /* its instances name the class they become */
        PyErr_SetString(PyExc_TypeError, "configure_types(): configured already with another InvalidSpecError");
        return NULL;
    }
    Py_XSETREF(invalid_spec_error, Py_NewRef(args[1]));
    if (refusal_type == NULL) { /* check's error class (see refusal_type): InvalidSpecError's layout
                                 * exactly, so that wording can make an instance a plain InvalidSpecError */
        PyTypeObject *base = (PyTypeObject *)args[1], *made;
        made = (PyTypeObject *)PyType_FromSpecWithBases(&refusal_spec, args[1]);
        if (made == NULL)
            return NULL;
        if (made->tp_basicsize != base->tp_basicsize || made->tp_itemsize != base->tp_itemsize ||
            made->tp_dictoffset != base->tp_dictoffset || made->tp_weaklistoffset != base->tp_weaklistoffset ||
            made->tp_new != ((PyTypeObject *)PyExc_BaseException)->tp_new || !(base->tp_flags & Py_TPFLAGS_HEAPTYPE) ||
            made->tp_dictoffset <= 0) {
            Py_DECREF(made);
            PyErr_SetString(PyExc_TypeError, "configure_types(): InvalidSpecError must be a Python class with "
                                             "an instance dict and BaseException's new");
            return NULL;
        }
        Py_XSETREF(refusal_type, (PyObject *)made);
    }
    if (refusal_marker == NULL && (refusal_marker = PyObject_CallNoArgs((PyObject *)&PyBaseObject_Type)) == NULL)
        return NULL;
    if (!PyDict_CheckExact(args[2])) {
        PyErr_SetString(PyExc_TypeError, "interned must be a dict");
        return NULL;
    }
    Py_XSETREF(interned, Py_NewRef(args[2]));
    interned_limit = PyLong_AsSsize_t(args[3]);
    if (interned_limit < 0) {
        if (!PyErr_Occurred())
            PyErr_SetString(PyExc_ValueError, "interned_limit must be >= 0");
        return NULL;
    }
    Py_RETURN_NONE;
}

/* Set `owner`.`attr` to `value` (a class attribute): DistTensorSpec's call slot is set again after,
 * since setting an attribute of a class may reset it. */
static int put_attr(PyObject *owner, PyObject *attr, PyObject *value) {
    if (PyObject_SetAttr(owner, attr, value) < 0)
        return -1;
    if (Spec_t != NULL && spec_init_descr != NULL)
        Spec_t->tp_vectorcall = spec_call;
    return 0;
}

/* stand_in(name, reference) -> the C function standing in for the module function `name`; or
 * stand_in(name, reference, owner, attr): puts the C method `name` in place as owner.attr (owner its
 * class, read here: the slots' offsets) and returns it. `reference` is the Python function the C hands
 * anything off its common path to. types.c_stand_in and types.c_stand_ins call it, once per name. */
static PyObject *stand_in(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    const char *name;
    PyObject *reference, *owner, *attr, *out;
    if ((nargs != 2 && nargs != 4) || !PyUnicode_Check(args[0])) {
        PyErr_SetString(PyExc_TypeError, "stand_in() takes a name and a reference, then a class and an attribute");
        return NULL;
    }
    name = PyUnicode_AsUTF8(args[0]);
    if (name == NULL)
        return NULL;
    reference = args[1];
    if (nargs == 2) {
        PyObject **slot;
        const char *fn;
        if (strcmp(name, "notation.merge_shardings") == 0)
            slot = &pure_merge, fn = "merge_shardings";
        else if (strcmp(name, "notation.mapping_for_axes") == 0)
            slot = &pure_mapping_for_axes, fn = "mapping_for_axes";
        else
            goto unknown;
        Py_XSETREF(*slot, Py_NewRef(reference));
        return PyObject_GetAttrString(module, fn);
    }
    owner = args[2], attr = args[3];
    if (!PyType_Check(owner) || Mesh_t == NULL) {
        PyErr_SetString(PyExc_TypeError, "stand_in(): the owner must be a class, after configure_types()");
        return NULL;
    }
    if (strcmp(name, "DistTensorSpec.__init__") == 0) {
        if (keep_type(owner, &Spec_t, "DistTensorSpec") < 0 || slot_offset(Spec_t, "shape", &off_shape) < 0 ||
            slot_offset(Spec_t, "dims_mapping", &off_dm) < 0 || slot_offset(Spec_t, "mesh", &off_mesh) < 0 ||
            slot_offset(Spec_t, "partial_dims", &off_partial) < 0 ||
            slot_offset(Spec_t, "_problem", &off_problem) < 0 || slot_offset(Spec_t, "coshard", &off_coshard) < 0 ||
            slot_offset(Spec_t, "valid_on_mesh", &off_valid) < 0)
            return NULL;
        Py_XSETREF(pure_init, Py_NewRef(reference));
        Py_XSETREF(spec_init_descr, PyDescr_NewMethod(Spec_t, &spec_init_def));
        out = Py_XNewRef(spec_init_descr);
    } else if (strcmp(name, "DistTensorSpec.check") == 0) {
        if ((PyTypeObject *)owner != Spec_t || refusal_type == NULL) {
            PyErr_SetString(PyExc_TypeError, "stand_in(): DistTensorSpec.check after its __init__");
            return NULL;
        }
        Py_XSETREF(pure_check, Py_NewRef(reference));
        out = PyDescr_NewMethod(Spec_t, &spec_check_def);
    } else if (strcmp(name, "DistAttr.make") == 0) {
        if (keep_type(owner, &Attr_t, "DistAttr") < 0 || slot_offset(Attr_t, "dims_mapping", &off_attr_dm) < 0 ||
            slot_offset(Attr_t, "partial_dims", &off_attr_partial) < 0 ||
            slot_offset(Attr_t, "mesh", &off_attr_mesh) < 0)
            return NULL;
        Py_XSETREF(pure_attr_make, Py_NewRef(reference));
        out = PyObject_GetAttrString(module, "attr_make");
    } else if (strcmp(name, "SpmdResult.make") == 0) {
        if (keep_type(owner, &Result_t, "SpmdResult") < 0 || slot_offset(Result_t, "inputs", &off_inputs) < 0 ||
            slot_offset(Result_t, "outputs", &off_outputs) < 0)
            return NULL;
        Py_XSETREF(pure_result_make, Py_NewRef(reference));
        out = PyObject_GetAttrString(module, "result_make");
    } else {
        goto unknown;
    }
    if (out == NULL)
        return NULL;
    if (PyCFunction_Check(out)) { /* a static method of its class, as the reference */
        PyObject *method = PyStaticMethod_New(out);
        Py_DECREF(out);
        if (method == NULL)
            return NULL;
        out = method;
    }
    if (put_attr(owner, attr, out) < 0) {
        Py_DECREF(out);
        return NULL;
    }
    return out;
unknown:
    PyErr_Format(PyExc_ValueError, "stand_in(): no C stand-in named %R", args[0]);
    return NULL;
}

/* configure_rules(RuleInput, getter_mapping, as_input, valid_inputs, attr) -> the method descriptor to
 * install as RuleInput.attr; the last two are the Python references */
static PyObject *configure_rules(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    (void)module;
    if (nargs != 5) {
        PyErr_SetString(PyExc_TypeError, "configure_rules() takes 5 arguments");
        return NULL;
    }
    if (keep_type(args[0], &RuleInput_t, "RuleInput") < 0)
        return NULL;
    Py_XSETREF(getter_mapping, Py_NewRef(args[1]));
    Py_XSETREF(as_input, Py_NewRef(args[2]));
    Py_XSETREF(pure_valid_inputs, Py_NewRef(args[3]));
    Py_XSETREF(pure_rule_attr, Py_NewRef(args[4]));
    return PyDescr_NewMethod(RuleInput_t, &rule_input_attr_def);
}

static PyMethodDef methods[] = {
    {"attr_make", (PyCFunction)(void (*)(void))attr_make, METH_FASTCALL | METH_KEYWORDS,
     "DistAttr.make(dims_mapping, partial_dims, mesh): see types.DistAttr.make."},
    {"result_make", (PyCFunction)(void (*)(void))result_make, METH_FASTCALL | METH_KEYWORDS,
     "SpmdResult.make(inputs, outputs): see types.SpmdResult.make."},
    {"valid_inputs", (PyCFunction)(void (*)(void))valid_inputs, METH_FASTCALL | METH_KEYWORDS,
     "ops.kit.tensor.valid_inputs(specs, names): see ops.kit.tensor._valid_inputs."},
    {"merge_shardings", (PyCFunction)(void (*)(void))merge_shardings, METH_FASTCALL | METH_KEYWORDS,
     "notation.merge_shardings(tensors): see notation.merge_shardings."},
    {"mapping_for_axes", (PyCFunction)(void (*)(void))mapping_for_axes, METH_FASTCALL | METH_KEYWORDS,
     "notation.mapping_for_axes(axes, letter_to_dim): see notation.mapping_for_axes."},
    {"configure_types", (PyCFunction)(void (*)(void))configure_types, METH_FASTCALL,
     "Register the mesh class, InvalidSpecError and the interned-attr table (types.py calls it once)."},
    {"stand_in", (PyCFunction)(void (*)(void))stand_in, METH_FASTCALL,
     "The C stand-in of a function marked types.c_stand_in (a method: put in place on its class)."},
    {"configure_rules", (PyCFunction)(void (*)(void))configure_rules, METH_FASTCALL,
     "Register RuleInput and its helpers (ops/kit/tensor.py calls it once)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module_def = {PyModuleDef_HEAD_INIT, "_speedups",
                                        "C versions of the value types' hot constructors (see _speedups.c).", -1,
                                        methods, NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit__speedups(void) {
#define INTERN(var, text)                                  \
    if ((var = PyUnicode_InternFromString(text)) == NULL) \
        return NULL;
    INTERN(s_shape, "shape")
    INTERN(s_dims_mapping, "dims_mapping")
    INTERN(s_mesh, "mesh")
    INTERN(s_partial_dims, "partial_dims")
    INTERN(s_valid_on_mesh, "valid_on_mesh")
    INTERN(s_coshard, "coshard")
    INTERN(s_hash, "_hash")
    INTERN(s_inputs, "inputs")
    INTERN(s_outputs, "outputs")
    INTERN(s_optional, "optional")
    INTERN(s_init, "__init__")
    INTERN(s_kind, "kind")
    INTERN(s_length, "length")
    INTERN(s_mesh_dim, "mesh-dim")
    INTERN(s_duplicate, "duplicate")
    INTERN(s_partial_range, "partial-range")
    INTERN(s_partial_shard, "partial-shard")
#undef INTERN
    empty_tuple = PyTuple_New(0);
    empty_frozenset = PyFrozenSet_New(NULL);
    no_partial = empty_frozenset;
    if (empty_tuple == NULL || empty_frozenset == NULL)
        return NULL;
    return PyModule_Create(&module_def);
}
