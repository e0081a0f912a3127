// Umbrella header of the C shim target: the few entry points Swift cannot call directly.
#ifndef TG_CSHIM_H
#define TG_CSHIM_H
// System headers before libevent's (see CEvent/shim.h: event-config.h defines _GNU_SOURCE).
#include <sys/types.h>
#include <sys/time.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <stdint.h>
#include <stdio.h>
#include "tg_event.h"
#include "tg_curl.h"
#include "tg_openssl.h"
#include "tg_tls.h"
#include "tg_tls_server.h"
#include "tg_socket.h"
#include "tg_memory.h"
#endif
