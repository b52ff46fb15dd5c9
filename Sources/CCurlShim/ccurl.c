#include "ccurl.h"
#include <curl/curl.h>

const char *ccurl_version(void) { return curl_version(); }
