/* Logging shared by every layer. CANN's switches: ASCEND_GLOBAL_LOG_LEVEL (0 debug, 1 info,
 * 2 warning, 3 error, 4 null; default 3), ASCEND_SLOG_PRINT_TO_STDOUT (accepted, we always print
 * to stderr), and HCCL_DEBUG (INFO/WARN/ERROR/DEBUG, overrides the level). */
#ifndef OH_LOG_H
#define OH_LOG_H

#include <stdarg.h>

enum oh_log_level { OH_LOG_DEBUG = 0, OH_LOG_INFO = 1, OH_LOG_WARN = 2, OH_LOG_ERROR = 3, OH_LOG_NONE = 4 };

/* Current threshold (read once from the environment). */
int oh_log_level(void);
/* Writes one line "[OpenHCCL <LEVEL>] <module>: <message>" to stderr if level >= threshold. */
void oh_log(int level, const char *module, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

#define OH_ERR(mod, ...) oh_log(OH_LOG_ERROR, mod, __VA_ARGS__)
#define OH_WARN(mod, ...) oh_log(OH_LOG_WARN, mod, __VA_ARGS__)
#define OH_INFO(mod, ...) oh_log(OH_LOG_INFO, mod, __VA_ARGS__)
#define OH_DBG(mod, ...) oh_log(OH_LOG_DEBUG, mod, __VA_ARGS__)

#endif
