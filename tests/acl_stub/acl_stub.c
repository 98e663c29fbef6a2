/* A fake libascendcl.so for hal/ascend's binding tests: every ACL call hal/ascend binds
 * (hal/ascend/asc_syms.h) as a stub that does nothing and succeeds. The linker version scripts next
 * to it hide one call (noreduce.map) or CANN's IPC calls (noipc.map), to check that a library
 * lacking them gives a clear error naming them instead of a crash (tests/unit/test_ascend_bind.c). */
#include "hal/ascend/asc_syms.h"

#define STUB(name, group) int name(void); int name(void) { return 0; }
ASC_SYMS(STUB)
