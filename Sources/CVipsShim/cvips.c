#include "cvips.h"
#include <vips/vips.h>
#include <vips/vector.h>
#include <string.h>
#include <stdlib.h>
#include <pthread.h>

static pthread_once_t init_once = PTHREAD_ONCE_INIT;
static int init_result = 0;
static const char *const init_argv0 = "artcache";

/* libvips warnings (corrupt tiles, ignored profiles) would go to stderr from
 * library code; the typed errors say what matters. */
static void quiet_log(const gchar *domain, GLogLevelFlags level, const gchar *message, gpointer data) {
    (void) domain; (void) level; (void) message; (void) data;
}

static void init_once_body(void) {
    if (VIPS_INIT(init_argv0)) {
        init_result = -1;
        return;
    }
    /* liborc 0.4.33 (Debian 12) crashes with two threads in libvips at once. */
    vips_vector_set_enabled(FALSE);
    g_log_set_handler("VIPS", G_LOG_LEVEL_WARNING | G_LOG_LEVEL_MESSAGE | G_LOG_LEVEL_INFO, quiet_log, NULL);
    vips_cache_set_max(0);
    vips_concurrency_set(1);
    vips_block_untrusted_set(TRUE);
    /* Only the loaders of CVIPS_LOADER_*: everything else stays blocked.
     * SVG and ImageMagick are reachable only through cvips_image_open with
     * their bit set, which the renderer sets from the sniffed format and its
     * own configuration. */
    vips_operation_block_set("VipsForeignLoad", TRUE);
    static const char *allowed[] = {
        "VipsForeignLoadJpeg", "VipsForeignLoadPng", "VipsForeignLoadNsgif",
        "VipsForeignLoadWebp", "VipsForeignLoadTiff", "VipsForeignLoadHeif",
        "VipsForeignLoadSvg", "VipsForeignLoadMagick",
    };
    for (size_t i = 0; i < sizeof(allowed) / sizeof(allowed[0]); i++) vips_operation_block_set(allowed[i], FALSE);
}

int cvips_init(const char *argv0) {
    /* The program name libvips gets is fixed: writing it here, outside the
     * once, raced with other threads' first calls (found by ThreadSanitizer). */
    (void) argv0;
    pthread_once(&init_once, init_once_body);
    return init_result;
}

const char *cvips_version(void) { return vips_version_string(); }

size_t cvips_tracked_memory(void) { return vips_tracked_get_mem(); }

size_t cvips_tracked_memory_highwater(void) { return vips_tracked_get_mem_highwater(); }

char *cvips_error_take(void) {
    const char *message = vips_error_buffer();
    char *copy = strdup(message ? message : "");
    vips_error_clear();
    return copy;
}

void cvips_free(void *pointer) { g_free(pointer); }

int cvips_interpretation_srgb(void) { return (int) VIPS_INTERPRETATION_sRGB; }
