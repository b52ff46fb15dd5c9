#ifndef CCURL_H
#define CCURL_H
/* Non-variadic wrappers over libcurl (curl_easy_setopt & co. are variadic). */
const char *ccurl_version(void);
#endif
