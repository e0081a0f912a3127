#include "tg_curl.h"

CURLcode tg_curl_easy_setopt_long(CURL *h, CURLoption o, long v) { return curl_easy_setopt(h, o, v); }
CURLcode tg_curl_easy_setopt_ptr(CURL *h, CURLoption o, const void *v) { return curl_easy_setopt(h, o, v); }
CURLcode tg_curl_easy_setopt_off_t(CURL *h, CURLoption o, curl_off_t v) { return curl_easy_setopt(h, o, v); }
CURLcode tg_curl_easy_getinfo_long(CURL *h, CURLINFO i, long *v) { return curl_easy_getinfo(h, i, v); }
CURLMcode tg_curl_multi_setopt_long(CURLM *h, CURLMoption o, long v) { return curl_multi_setopt(h, o, v); }
CURLMcode tg_curl_multi_setopt_ptr(CURLM *h, CURLMoption o, const void *v) { return curl_multi_setopt(h, o, v); }
