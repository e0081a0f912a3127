// The allocator's own calls that Glibc's module leaves out (malloc.h): giving freed pages back.
#ifndef TG_MEMORY_H
#define TG_MEMORY_H
#include <malloc.h>
#endif
