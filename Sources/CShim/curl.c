#include "tg_curl.h"

CURLcode tg_curl_easy_setopt_long(CURL *h, CURLoption o, long v) { return curl_easy_setopt(h, o, v); }
CURLcode tg_curl_easy_setopt_ptr(CURL *h, CURLoption o, const void *v) { return curl_easy_setopt(h, o, v); }
CURLcode tg_curl_easy_setopt_off_t(CURL *h, CURLoption o, curl_off_t v) { return curl_easy_setopt(h, o, v); }
CURLcode tg_curl_easy_getinfo_long(CURL *h, CURLINFO i, long *v) { return curl_easy_getinfo(h, i, v); }
CURLMcode tg_curl_multi_setopt_long(CURLM *h, CURLMoption o, long v) { return curl_multi_setopt(h, o, v); }
CURLMcode tg_curl_multi_setopt_ptr(CURLM *h, CURLMoption o, const void *v) { return curl_multi_setopt(h, o, v); }

CURLMcode tg_curl_multi_set_socket_function(CURLM *m, curl_socket_callback cb, void *userp) {
    CURLMcode rc = curl_multi_setopt(m, CURLMOPT_SOCKETFUNCTION, cb);
    return rc != CURLM_OK ? rc : curl_multi_setopt(m, CURLMOPT_SOCKETDATA, userp);
}
CURLMcode tg_curl_multi_set_timer_function(CURLM *m, curl_multi_timer_callback cb, void *userp) {
    CURLMcode rc = curl_multi_setopt(m, CURLMOPT_TIMERFUNCTION, cb);
    return rc != CURLM_OK ? rc : curl_multi_setopt(m, CURLMOPT_TIMERDATA, userp);
}
CURLcode tg_curl_easy_set_write_function(CURL *e, curl_write_callback cb, void *userp) {
    CURLcode rc = curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, cb);
    return rc != CURLE_OK ? rc : curl_easy_setopt(e, CURLOPT_WRITEDATA, userp);
}
CURLcode tg_curl_easy_set_header_function(CURL *e, curl_write_callback cb, void *userp) {
    CURLcode rc = curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, cb);
    return rc != CURLE_OK ? rc : curl_easy_setopt(e, CURLOPT_HEADERDATA, userp);
}
int tg_curl_multi_next_done(CURLM *m, CURL **easy, CURLcode *result) {
    int left;
    CURLMsg *msg;
    while ((msg = curl_multi_info_read(m, &left)) != NULL) {
        if (msg->msg == CURLMSG_DONE) {
            *easy = msg->easy_handle;
            *result = msg->data.result;
            return 1;
        }
    }
    return 0;
}
