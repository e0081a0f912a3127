// curl_easy_setopt / curl_multi_setopt are variadic, which Swift cannot call: typed wrappers.
#ifndef TG_CURL_H
#define TG_CURL_H
#include <curl/curl.h>

CURLcode tg_curl_easy_setopt_long(CURL *handle, CURLoption option, long value);
CURLcode tg_curl_easy_setopt_ptr(CURL *handle, CURLoption option, const void *value);
CURLcode tg_curl_easy_setopt_off_t(CURL *handle, CURLoption option, curl_off_t value);
CURLcode tg_curl_easy_getinfo_long(CURL *handle, CURLINFO info, long *value);
CURLMcode tg_curl_multi_setopt_long(CURLM *handle, CURLMoption option, long value);
CURLMcode tg_curl_multi_setopt_ptr(CURLM *handle, CURLMoption option, const void *value);
#endif
