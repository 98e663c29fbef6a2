/* Thread-locals read on every call of a hot path. In a shared library the default TLS model
 * (global-dynamic) reaches them through a call to __tls_get_addr; initial-exec reads them at a
 * fixed offset from the thread pointer. Only for small variables: a library loaded by dlopen takes
 * them from glibc's static TLS surplus, a few hundred bytes shared by every such library. */
#ifndef OH_TLS_H
#define OH_TLS_H

#define OH_TLS_HOT __attribute__((tls_model("initial-exec")))

#endif
