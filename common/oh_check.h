/* The one CHECK macro: every call that can fail returns an int result code (0 = success,
 * in the caller's own code domain: hal_result, aclError or HcclResult); CHECK propagates it,
 * logging the failed expression once with where it failed. */
#ifndef OH_CHECK_H
#define OH_CHECK_H

#include "oh_log.h"

#define CHECK(expr)                                                                        \
    do {                                                                                   \
        int oh_rc_ = (int)(expr);                                                          \
        if (oh_rc_ != 0) {                                                                 \
            OH_DBG("check", "%s failed with %d at %s:%d", #expr, oh_rc_, __FILE__, __LINE__); \
            return oh_rc_;                                                                 \
        }                                                                                  \
    } while (0)

/* Same, but maps the failed code into the caller's domain with map(code). */
#define CHECK_MAP(expr, map)                                                               \
    do {                                                                                   \
        int oh_rc_ = (int)(expr);                                                          \
        if (oh_rc_ != 0) {                                                                 \
            OH_DBG("check", "%s failed with %d at %s:%d", #expr, oh_rc_, __FILE__, __LINE__); \
            return map(oh_rc_);                                                            \
        }                                                                                  \
    } while (0)

/* Guard for a bad argument: logs why and returns code. */
#define CHECK_ARG(cond, code, mod, ...)                                                    \
    do {                                                                                   \
        if (!(cond)) {                                                                     \
            OH_ERR(mod, __VA_ARGS__);                                                      \
            return code;                                                                   \
        }                                                                                  \
    } while (0)

#endif
