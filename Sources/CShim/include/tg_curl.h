// curl_easy_setopt / curl_multi_setopt are variadic, which Swift cannot call: typed wrappers.
#ifndef TG_CURL_H
#define TG_CURL_H
#include <curl/curl.h>
#include <sys/socket.h>

CURLcode tg_curl_easy_setopt_long(CURL *handle, CURLoption option, long value);
CURLcode tg_curl_easy_setopt_ptr(CURL *handle, CURLoption option, const void *value);
CURLcode tg_curl_easy_setopt_off_t(CURL *handle, CURLoption option, curl_off_t value);
CURLcode tg_curl_easy_getinfo_long(CURL *handle, CURLINFO info, long *value);
CURLMcode tg_curl_multi_setopt_long(CURLM *handle, CURLMoption option, long value);
CURLMcode tg_curl_multi_setopt_ptr(CURLM *handle, CURLMoption option, const void *value);

/// Typed setters for the callback options (their C function-pointer types survive).
CURLMcode tg_curl_multi_set_socket_function(CURLM *multi, curl_socket_callback cb, void *userp);
CURLMcode tg_curl_multi_set_timer_function(CURLM *multi, curl_multi_timer_callback cb, void *userp);
CURLcode tg_curl_easy_set_write_function(CURL *easy, curl_write_callback cb, void *userp);
CURLcode tg_curl_easy_set_header_function(CURL *easy, curl_write_callback cb, void *userp);
/// Connects only to public addresses (loopback too if allow_loopback), checked on the address
/// curl connects to; and through no proxy.
CURLcode tg_curl_easy_public_addresses_only(CURL *easy, int allow_loopback);
/// Whether an address is a public one (the check the option above makes).
int tg_address_is_public(const struct sockaddr *address, int allow_loopback);
/// The easy handle and result of a finished transfer from curl_multi_info_read, or 0.
int tg_curl_multi_next_done(CURLM *multi, CURL **easy, CURLcode *result);
#endif
