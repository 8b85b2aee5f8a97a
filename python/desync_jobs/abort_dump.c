/*
 * _abort_dump: keep a rank's Flight Recorder evidence when the process aborts.
 *
 * Gloo enforces message sizes in its TCP transport thread; a collective mismatch
 * ("op.preamble.length <= op.nbytes") throws there, std::terminate runs and the
 * process gets SIGABRT before any Python code sees an error. NCCL would hang
 * instead and its watchdog would dump. This handler runs in the aborting thread,
 * takes the GIL (the trainer thread released it while waiting on the collective),
 * calls the registered Python callable (which writes the dump), then lets the
 * default SIGABRT action end the process so the exit status stays "aborted".
 *
 * Not async-signal-safe in general; abort() from std::terminate is raised
 * synchronously from a normal thread context, which is the case we care about.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>

static PyObject *g_callback = NULL;
static volatile sig_atomic_t g_entered = 0;
static int g_installed = 0;

static void die_with_default_abort(void) {
    struct sigaction dfl;
    memset(&dfl, 0, sizeof dfl);
    dfl.sa_handler = SIG_DFL;
    sigemptyset(&dfl.sa_mask);
    sigaction(SIGABRT, &dfl, NULL);
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGABRT);
    pthread_sigmask(SIG_UNBLOCK, &set, NULL);
    raise(SIGABRT);
    _exit(134); /* not reached */
}

static void on_sigabrt(int signum) {
    (void)signum;
    if (!g_entered && g_callback != NULL && Py_IsInitialized()) {
        g_entered = 1;
        static const char msg[] = "[abort_dump] SIGABRT: dumping flight recorder before abort\n";
        ssize_t ignored = write(2, msg, sizeof msg - 1);
        (void)ignored;
        PyGILState_STATE gil = PyGILState_Ensure();
        PyObject *result = PyObject_CallNoArgs(g_callback);
        if (result == NULL) {
            PyErr_Print();
        } else {
            Py_DECREF(result);
        }
        PyGILState_Release(gil);
    }
    die_with_default_abort();
}

static PyObject *install(PyObject *self, PyObject *callback) {
    (void)self;
    if (!PyCallable_Check(callback)) {
        PyErr_SetString(PyExc_TypeError, "install() expects a callable");
        return NULL;
    }
    Py_XINCREF(callback);
    Py_XSETREF(g_callback, callback);
    if (!g_installed) {
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = on_sigabrt;
        sigemptyset(&sa.sa_mask);
        /* SA_NODEFER: a second abort inside the callback reaches us again and
         * g_entered sends it straight to the default action. */
        sa.sa_flags = SA_NODEFER;
        if (sigaction(SIGABRT, &sa, NULL) != 0) {
            PyErr_SetFromErrno(PyExc_OSError);
            return NULL;
        }
        g_installed = 1;
    }
    Py_RETURN_NONE;
}

static PyObject *uninstall(PyObject *self, PyObject *unused) {
    (void)self;
    (void)unused;
    if (g_installed) {
        struct sigaction dfl;
        memset(&dfl, 0, sizeof dfl);
        dfl.sa_handler = SIG_DFL;
        sigemptyset(&dfl.sa_mask);
        sigaction(SIGABRT, &dfl, NULL);
        g_installed = 0;
    }
    Py_CLEAR(g_callback);
    Py_RETURN_NONE;
}

static void *abort_thread_main(void *arg) {
    (void)arg;
    abort();
    return NULL;
}

static PyObject *abort_in_native_thread(PyObject *self, PyObject *unused) {
    /* Test helper: abort() from a thread Python does not know, the way a Gloo
     * transport thread does; the caller should then wait with the GIL released. */
    (void)self;
    (void)unused;
    pthread_t thread;
    int err = pthread_create(&thread, NULL, abort_thread_main, NULL);
    if (err != 0) {
        errno = err;
        return PyErr_SetFromErrno(PyExc_OSError);
    }
    pthread_detach(thread);
    Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
    {"install", install, METH_O, "install(callback): call callback (with the GIL) on SIGABRT, then abort."},
    {"uninstall", uninstall, METH_NOARGS, "restore the default SIGABRT action."},
    {"abort_in_native_thread", abort_in_native_thread, METH_NOARGS, "abort() from a new native thread (tests)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_abort_dump", "Dump hook for SIGABRT.", -1, methods,
    NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__abort_dump(void) { return PyModule_Create(&module); }
