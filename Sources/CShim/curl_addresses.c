// Public addresses only (a fetch whose URL a client chose: a client metadata document), judged
// on the address curl is about to connect to, after its own resolution: a name that resolves
// (or re-resolves) to a private address is refused where the connection is made, not before.
#include "tg_curl.h"
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>

static int v4_public(uint32_t a, int allow_loopback) {
    uint8_t b0 = a >> 24, b1 = (a >> 16) & 0xff, b2 = (a >> 8) & 0xff;
    if (b0 == 127) return allow_loopback;
    if (b0 == 0 || b0 == 10 || b0 >= 224) return 0;            // this network, private, multicast, reserved
    if (b0 == 100 && (b1 & 0xc0) == 64) return 0;              // 100.64.0.0/10 shared (CGN)
    if (b0 == 169 && b1 == 254) return 0;                      // link-local (cloud metadata)
    if (b0 == 172 && (b1 & 0xf0) == 16) return 0;              // 172.16.0.0/12
    if (b0 == 192 && b1 == 168) return 0;                      // 192.168.0.0/16
    if (b0 == 192 && b1 == 0 && (b2 == 0 || b2 == 2)) return 0;  // IETF assignments, TEST-NET-1
    if (b0 == 192 && b1 == 88 && b2 == 99) return 0;           // 6to4 relay anycast
    if (b0 == 198 && (b1 & 0xfe) == 18) return 0;              // benchmarking
    if (b0 == 198 && b1 == 51 && b2 == 100) return 0;          // TEST-NET-2
    if (b0 == 203 && b1 == 0 && b2 == 113) return 0;           // TEST-NET-3
    return 1;
}

static uint32_t v4_at(const uint8_t *p) {
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static int v6_public(const uint8_t *a, int allow_loopback) {
    static const uint8_t loopback[16] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1};
    static const uint8_t mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
    static const uint8_t nat64[12] = {0, 0x64, 0xff, 0x9b, 0, 0, 0, 0, 0, 0, 0, 0};
    static const uint8_t translated[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0, 0};  // ::ffff:0:0:0/96
    static const uint8_t zero[12] = {0};
    if (memcmp(a, loopback, 16) == 0) return allow_loopback;
    // An IPv4 address in IPv6 clothing is judged as IPv4 (mapped, NAT64, compatible, 6to4).
    if (memcmp(a, mapped, 12) == 0 || memcmp(a, nat64, 12) == 0 || memcmp(a, translated, 12) == 0)
        return v4_public(v4_at(a + 12), allow_loopback);
    // 64:ff9b:1::/48, local-use NAT64 (RFC 8215): its embedding is the operator's, so the
    // embedded address cannot be told; refused.
    if (a[0] == 0 && a[1] == 0x64 && a[2] == 0xff && a[3] == 0x9b && a[4] == 0 && a[5] == 1) return 0;
    if (memcmp(a, zero, 12) == 0) return 0;                    // ::, IPv4-compatible (deprecated)
    if (a[0] == 0x20 && a[1] == 0x02) return v4_public(v4_at(a + 2), 0);  // 2002::/16 6to4
    if ((a[0] & 0xfe) == 0xfc) return 0;                       // fc00::/7 unique local
    if (a[0] == 0xfe && (a[1] & 0xc0) == 0x80) return 0;       // fe80::/10 link-local
    if (a[0] == 0xfe && (a[1] & 0xc0) == 0xc0) return 0;       // fec0::/10 site-local
    if (a[0] == 0xff) return 0;                                // multicast
    if (a[0] == 0x01 && a[1] == 0 && a[2] == 0 && a[3] == 0 && a[4] == 0 && a[5] == 0 && a[6] == 0 && a[7] == 0)
        return 0;                                              // 100::/64 discard
    if (a[0] == 0x20 && a[1] == 0x01 && a[2] == 0x0d && a[3] == 0xb8) return 0;  // documentation
    if (a[0] == 0x20 && a[1] == 0x01 && a[2] < 0x02) return 0;  // 2001::/23 IETF protocol assignments
    return 1;
}

int tg_address_is_public(const struct sockaddr *sa, int allow_loopback) {
    if (sa->sa_family == AF_INET) {
        const struct sockaddr_in *in = (const struct sockaddr_in *)sa;
        return v4_public(ntohl(in->sin_addr.s_addr), allow_loopback);
    }
    if (sa->sa_family == AF_INET6) {
        const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)sa;
        return v6_public(in6->sin6_addr.s6_addr, allow_loopback);
    }
    return 0;
}

static curl_socket_t open_public(void *clientp, curlsocktype purpose, struct curl_sockaddr *address) {
    int allow_loopback = clientp != NULL;
    if (purpose != CURLSOCKTYPE_IPCXN || !tg_address_is_public(&address->addr, allow_loopback)) return CURL_SOCKET_BAD;
    return socket(address->family, address->socktype, address->protocol);
}

CURLcode tg_curl_easy_public_addresses_only(CURL *e, int allow_loopback) {
    CURLcode rc = curl_easy_setopt(e, CURLOPT_OPENSOCKETFUNCTION, open_public);
    if (rc != CURLE_OK) return rc;
    rc = curl_easy_setopt(e, CURLOPT_OPENSOCKETDATA, allow_loopback ? (void *)1 : NULL);
    // No proxy: a proxy's address would be judged, not the document host's.
    return rc != CURLE_OK ? rc : curl_easy_setopt(e, CURLOPT_PROXY, "");
}
