// Umbrella header of the C shim target: the few entry points Swift cannot call directly.
#ifndef TG_CSHIM_H
#define TG_CSHIM_H
#include "tg_event.h"
#include "tg_curl.h"
#include "tg_openssl.h"
#include "tg_tls.h"
#endif
