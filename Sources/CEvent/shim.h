// System headers first: libevent's event-config.h defines _GNU_SOURCE, and if it came
// before <features.h> the C library's types (fd_set) would be declared differently here
// than in Swift's Glibc module, and the two modules' definitions would clash.
#include <sys/types.h>
#include <sys/time.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <stdint.h>
#include <stdio.h>
#include <stdarg.h>
#include <event2/event.h>
#include <event2/thread.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/bufferevent_ssl.h>
#include <event2/listener.h>
#include <event2/util.h>
#include <event2/dns.h>
