/* The "artcache-aom" AV1 encoder plugin for libheif: libaom encoders kept
 * in a pool between images (see cheif_aom.h). What it does with an image
 * mirrors libheif 1.15's own aom plugin (heif_encoder_aom.cc) for the
 * parameters AVIFEncoder.swift sets: all-intra usage, one frame, no lag,
 * key frames only, constant quality (cq-level from the quality as libheif
 * computes it), full range unless the image's nclx says otherwise, its
 * colour description on colour images (not on an alpha plane), chroma
 * sample position unknown at 4:2:0 and co-located at 4:4:4, post-
 * processing filtering skipped, extra options applied last. */
#include "cheif_aom.h"

#include <aom/aom_encoder.h>
#include <aom/aomcx.h>
#include <libheif/heif.h>
#include <libheif/heif_plugin.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define OPTIONS_MAX 256

/* Everything an encoder is made with; two images with equal keys can share one. */
struct key {
    int width, height, format, profile, monochrome, sample_position;
    int speed, threads, tune, min_q, max_q, lossless;
    int range, primaries, transfer, matrix; /* -1: not set (libaom's defaults) */
    char options[OPTIONS_MAX];              /* "name=value\n"... in the order given */
};

struct pooled {
    struct key key;
    aom_codec_ctx_t codec;
    unsigned long used; /* pool clock when last given back */
    long images;        /* images it has encoded */
};

static pthread_mutex_t pool_lock = PTHREAD_MUTEX_INITIALIZER;
static struct pooled *pool[CHEIF_AOM_POOL_MAX];
static int pool_count;
static unsigned long pool_clock;
static long made_count;

/* One per heif_encoder: the parameters, then the bytes of its image. */
struct encoder {
    int quality, lossless, speed, threads, tune, min_q, max_q;
    enum heif_chroma chroma;
    char options[OPTIONS_MAX];
    int options_overflow;
    uint8_t *data;
    size_t size;
    int handed;
};

static const struct heif_error ok = {heif_error_Ok, heif_suberror_Unspecified, "Success"};

static struct heif_error failure(enum heif_error_code code, enum heif_suberror_code subcode, const char *message) {
    struct heif_error error = {code, subcode, message};
    return error;
}

/* --- the pool */

static struct pooled *take(const struct key *key) {
    struct pooled *found = NULL;
    pthread_mutex_lock(&pool_lock);
    for (int i = 0; i < pool_count; i++) {
        if (memcmp(&pool[i]->key, key, sizeof *key) == 0) {
            found = pool[i];
            pool[i] = pool[--pool_count];
            break;
        }
    }
    pthread_mutex_unlock(&pool_lock);
    return found;
}

static void discard(struct pooled *entry) {
    aom_codec_destroy(&entry->codec);
    free(entry);
}

/* Back into the pool, or freed (too large); the least recently used
 * idle encoder is freed when the pool is full. */
static void give_back(struct pooled *entry) {
    if (entry->key.width * entry->key.height > CHEIF_AOM_POOL_MAX_PIXELS) {
        discard(entry);
        return;
    }
    struct pooled *victim = NULL;
    pthread_mutex_lock(&pool_lock);
    entry->used = ++pool_clock;
    if (pool_count == CHEIF_AOM_POOL_MAX) {
        int oldest = 0;
        for (int i = 1; i < pool_count; i++)
            if (pool[i]->used < pool[oldest]->used) oldest = i;
        victim = pool[oldest];
        pool[oldest] = pool[--pool_count];
    }
    pool[pool_count++] = entry;
    pthread_mutex_unlock(&pool_lock);
    if (victim) discard(victim);
}

int cheif_aom_idle(void) {
    pthread_mutex_lock(&pool_lock);
    int count = pool_count;
    pthread_mutex_unlock(&pool_lock);
    return count;
}

long cheif_aom_made(void) {
    pthread_mutex_lock(&pool_lock);
    long count = made_count;
    pthread_mutex_unlock(&pool_lock);
    return count;
}

long cheif_aom_images_of_idle(int width, int height) {
    long most = 0;
    pthread_mutex_lock(&pool_lock);
    for (int i = 0; i < pool_count; i++)
        if (pool[i]->key.width == width && pool[i]->key.height == height && pool[i]->images > most) most = pool[i]->images;
    pthread_mutex_unlock(&pool_lock);
    return most;
}

void cheif_aom_drain(void) {
    struct pooled *idle[CHEIF_AOM_POOL_MAX];
    pthread_mutex_lock(&pool_lock);
    int count = pool_count;
    memcpy(idle, pool, sizeof(struct pooled *) * (size_t) count);
    pool_count = 0;
    pthread_mutex_unlock(&pool_lock);
    for (int i = 0; i < count; i++) discard(idle[i]);
}

/* A new libaom encoder for `key`, configured as libheif's aom plugin does. */
static struct pooled *make(const struct key *key) {
    struct pooled *entry = calloc(1, sizeof *entry);
    if (!entry) return NULL;
    entry->key = *key;
    aom_codec_iface_t *iface = aom_codec_av1_cx();
    aom_codec_enc_cfg_t cfg;
    if (aom_codec_enc_config_default(iface, &cfg, AOM_USAGE_ALL_INTRA) != AOM_CODEC_OK) {
        free(entry);
        return NULL;
    }
    cfg.g_w = (unsigned) key->width;
    cfg.g_h = (unsigned) key->height;
    cfg.g_limit = 1;
    cfg.g_lag_in_frames = 0;
    cfg.kf_mode = AOM_KF_DISABLED;
    cfg.kf_max_dist = 0;
    cfg.g_profile = (unsigned) key->profile;
    cfg.g_bit_depth = AOM_BITS_8;
    cfg.g_input_bit_depth = 8;
    cfg.rc_end_usage = AOM_Q;
    cfg.rc_min_quantizer = (unsigned) key->min_q;
    cfg.rc_max_quantizer = (unsigned) key->max_q;
    cfg.g_error_resilient = 0;
    cfg.g_threads = (unsigned) key->threads;
    cfg.monochrome = key->monochrome ? 1 : 0;
    if (aom_codec_enc_init(&entry->codec, iface, &cfg, 0) != AOM_CODEC_OK) {
        free(entry);
        return NULL;
    }
    aom_codec_control(&entry->codec, AOME_SET_CPUUSED, key->speed);
    if (key->threads > 1) aom_codec_control(&entry->codec, AV1E_SET_ROW_MT, 1);
    aom_codec_control(&entry->codec, AV1E_SET_COLOR_RANGE, key->range);
    aom_codec_control(&entry->codec, AV1E_SET_CHROMA_SAMPLE_POSITION, key->sample_position);
    if (key->primaries >= 0) {
        aom_codec_control(&entry->codec, AV1E_SET_COLOR_PRIMARIES, key->primaries);
        aom_codec_control(&entry->codec, AV1E_SET_MATRIX_COEFFICIENTS, key->matrix);
        aom_codec_control(&entry->codec, AV1E_SET_TRANSFER_CHARACTERISTICS, key->transfer);
    }
    aom_codec_control(&entry->codec, AOME_SET_TUNING, key->tune);
    if (key->lossless) aom_codec_control(&entry->codec, AV1E_SET_LOSSLESS, 1);
    aom_codec_control(&entry->codec, AV1E_SET_SKIP_POSTPROC_FILTERING, 1);
    /* The extra options last: they may override what is set above. */
    char options[OPTIONS_MAX];
    memcpy(options, key->options, sizeof options);
    char *rest = options, *line;
    while ((line = strsep(&rest, "\n")) != NULL) {
        char *value = strchr(line, '=');
        if (!value) continue;
        *value++ = 0;
        aom_codec_set_option(&entry->codec, line, value);
    }
    pthread_mutex_lock(&pool_lock);
    made_count++;
    pthread_mutex_unlock(&pool_lock);
    return entry;
}

/* --- the plugin's functions */

static const char *plugin_name(void) { return "artcache libaom, encoders kept between images"; }

static struct heif_error new_encoder(void **out) {
    struct encoder *encoder = calloc(1, sizeof *encoder);
    if (!encoder) return failure(heif_error_Memory_allocation_error, heif_suberror_Unspecified, "artcache-aom: no memory");
    /* libheif's aom plugin's defaults. */
    encoder->quality = 50;
    encoder->speed = 6;
    encoder->threads = 4;
    encoder->tune = AOM_TUNE_SSIM;
    encoder->min_q = 0;
    encoder->max_q = 63;
    encoder->chroma = heif_chroma_420;
    *out = encoder;
    return ok;
}

static void free_encoder(void *raw) {
    struct encoder *encoder = raw;
    free(encoder->data);
    free(encoder);
}

static struct heif_error set_quality(void *raw, int quality) {
    if (quality < 0 || quality > 100) return failure(heif_error_Usage_error, heif_suberror_Invalid_parameter_value, "artcache-aom: quality 0-100");
    ((struct encoder *) raw)->quality = quality;
    return ok;
}

static struct heif_error get_quality(void *raw, int *quality) {
    *quality = ((struct encoder *) raw)->quality;
    return ok;
}

static struct heif_error set_lossless(void *raw, int lossless) {
    ((struct encoder *) raw)->lossless = lossless ? 1 : 0;
    return ok;
}

static struct heif_error get_lossless(void *raw, int *lossless) {
    *lossless = ((struct encoder *) raw)->lossless;
    return ok;
}

static struct heif_error set_logging(void *raw, int level) {
    (void) raw; (void) level;
    return ok;
}

static struct heif_error get_logging(void *raw, int *level) {
    (void) raw;
    *level = 0;
    return ok;
}

static const struct heif_error unsupported = {heif_error_Usage_error, heif_suberror_Unsupported_parameter,
                                              "artcache-aom: unsupported parameter"};
static const struct heif_error invalid = {heif_error_Usage_error, heif_suberror_Invalid_parameter_value,
                                          "artcache-aom: invalid parameter value"};

static struct heif_error set_integer(void *raw, const char *name, int value) {
    struct encoder *encoder = raw;
    if (strcmp(name, "quality") == 0) return set_quality(raw, value);
    if (strcmp(name, "lossless") == 0) return set_lossless(raw, value);
    if (strcmp(name, "speed") == 0) {
        if (value < 0 || value > 9) return invalid;
        encoder->speed = value;
    } else if (strcmp(name, "threads") == 0) {
        if (value < 1 || value > 64) return invalid;
        encoder->threads = value;
    } else if (strcmp(name, "min-q") == 0) {
        if (value < 0 || value > 63) return invalid;
        encoder->min_q = value;
    } else if (strcmp(name, "max-q") == 0) {
        if (value < 0 || value > 63) return invalid;
        encoder->max_q = value;
    } else {
        return unsupported;
    }
    return ok;
}

static struct heif_error get_integer(void *raw, const char *name, int *value) {
    struct encoder *encoder = raw;
    if (strcmp(name, "quality") == 0) *value = encoder->quality;
    else if (strcmp(name, "lossless") == 0) *value = encoder->lossless;
    else if (strcmp(name, "speed") == 0) *value = encoder->speed;
    else if (strcmp(name, "threads") == 0) *value = encoder->threads;
    else if (strcmp(name, "min-q") == 0) *value = encoder->min_q;
    else if (strcmp(name, "max-q") == 0) *value = encoder->max_q;
    else return unsupported;
    return ok;
}

static struct heif_error set_boolean(void *raw, const char *name, int value) {
    if (strcmp(name, "lossless") == 0) return set_lossless(raw, value);
    return unsupported;
}

static struct heif_error get_boolean(void *raw, const char *name, int *value) {
    if (strcmp(name, "lossless") == 0) return get_lossless(raw, value);
    return unsupported;
}

static struct heif_error set_string(void *raw, const char *name, const char *value) {
    struct encoder *encoder = raw;
    if (strcmp(name, "chroma") == 0) {
        if (strcmp(value, "420") == 0) encoder->chroma = heif_chroma_420;
        else if (strcmp(value, "422") == 0) encoder->chroma = heif_chroma_422;
        else if (strcmp(value, "444") == 0) encoder->chroma = heif_chroma_444;
        else return invalid;
        return ok;
    }
    if (strcmp(name, "tune") == 0) {
        if (strcmp(value, "ssim") == 0) encoder->tune = AOM_TUNE_SSIM;
        else if (strcmp(value, "psnr") == 0) encoder->tune = AOM_TUNE_PSNR;
        else return invalid;
        return ok;
    }
    if (strncmp(name, "aom:", 4) == 0) {
        size_t used = strlen(encoder->options);
        int wrote = snprintf(encoder->options + used, sizeof encoder->options - used, "%s=%s\n", name + 4, value);
        if (wrote < 0 || (size_t) wrote >= sizeof encoder->options - used) {
            encoder->options[used] = 0;
            encoder->options_overflow = 1;
            return failure(heif_error_Usage_error, heif_suberror_Invalid_parameter_value, "artcache-aom: too many aom: options");
        }
        return ok;
    }
    return unsupported;
}

static struct heif_error get_string(void *raw, const char *name, char *value, int size) {
    struct encoder *encoder = raw;
    const char *text = NULL;
    if (strcmp(name, "chroma") == 0)
        text = encoder->chroma == heif_chroma_444 ? "444" : encoder->chroma == heif_chroma_422 ? "422" : "420";
    else if (strcmp(name, "tune") == 0)
        text = encoder->tune == AOM_TUNE_PSNR ? "psnr" : "ssim";
    else
        return unsupported;
    if (size > 0) {
        strncpy(value, text, (size_t) size - 1);
        value[size - 1] = 0;
    }
    return ok;
}

static const struct heif_encoder_parameter **list_parameters(void *raw) {
    (void) raw;
    /* Set through the named calls above; nothing to enumerate. */
    static const struct heif_encoder_parameter *none[] = {NULL};
    return none;
}

static void query_input_colorspace(enum heif_colorspace *colorspace, enum heif_chroma *chroma) {
    *colorspace = heif_colorspace_YCbCr;
    *chroma = heif_chroma_420;
}

static void query_input_colorspace2(void *raw, enum heif_colorspace *colorspace, enum heif_chroma *chroma) {
    if (*colorspace == heif_colorspace_monochrome) return;
    *colorspace = heif_colorspace_YCbCr;
    *chroma = ((struct encoder *) raw)->chroma;
}

static struct heif_error encode_image(void *raw, const struct heif_image *image, enum heif_image_input_class input_class) {
    struct encoder *encoder = raw;
    if (encoder->options_overflow) return failure(heif_error_Usage_error, heif_suberror_Invalid_parameter_value, "artcache-aom: too many aom: options");
    free(encoder->data);
    encoder->data = NULL;
    encoder->size = 0;
    encoder->handed = 0;

    const int width = heif_image_get_width(image, heif_channel_Y);
    const int height = heif_image_get_height(image, heif_channel_Y);
    const enum heif_chroma chroma = heif_image_get_chroma_format(image);
    if (width < 1 || height < 1 || heif_image_get_bits_per_pixel_range(image, heif_channel_Y) != 8)
        return failure(heif_error_Unsupported_feature, heif_suberror_Unsupported_bit_depth, "artcache-aom: 8-bit images only");

    struct key key;
    memset(&key, 0, sizeof key);
    key.width = width;
    key.height = height;
    switch (chroma) {
    case heif_chroma_monochrome:
        key.monochrome = 1;
        /* fallthrough */
    case heif_chroma_420:
        key.format = AOM_IMG_FMT_I420; key.profile = 0; key.sample_position = AOM_CSP_UNKNOWN;
        break;
    case heif_chroma_422:
        key.format = AOM_IMG_FMT_I422; key.profile = 2; key.sample_position = AOM_CSP_COLOCATED;
        break;
    case heif_chroma_444:
        key.format = AOM_IMG_FMT_I444; key.profile = 1; key.sample_position = AOM_CSP_COLOCATED;
        break;
    default:
        return failure(heif_error_Unsupported_feature, heif_suberror_Unsupported_color_conversion, "artcache-aom: chroma format not taken");
    }
    key.speed = encoder->speed;
    key.threads = encoder->threads;
    key.tune = encoder->tune;
    key.min_q = encoder->min_q;
    key.max_q = encoder->max_q;
    key.lossless = encoder->lossless;
    key.range = 1;
    key.primaries = key.transfer = key.matrix = -1;
    struct heif_color_profile_nclx *nclx = NULL;
    if (heif_image_get_nclx_color_profile(image, &nclx).code != heif_error_Ok) nclx = NULL;
    if (nclx) {
        key.range = nclx->full_range_flag;
        if (input_class == heif_image_input_class_normal || input_class == heif_image_input_class_thumbnail) {
            key.primaries = nclx->color_primaries;
            key.transfer = nclx->transfer_characteristics;
            key.matrix = nclx->matrix_coefficients;
        }
        heif_nclx_color_profile_free(nclx);
    }
    memcpy(key.options, encoder->options, sizeof key.options);

    /* The pixels, as libaom takes them (a monochrome image's chroma is mid-grey). */
    aom_image_t input;
    if (!aom_img_alloc(&input, (aom_img_fmt_t) key.format, (unsigned) width, (unsigned) height, 1))
        return failure(heif_error_Memory_allocation_error, heif_suberror_Unspecified, "artcache-aom: cannot allocate the frame");
    const int chroma_width = chroma == heif_chroma_444 ? width : (width + 1) / 2;
    const int chroma_height = chroma == heif_chroma_444 || chroma == heif_chroma_422 ? height : (height + 1) / 2;
    for (int plane = 0; plane < 3; plane++) {
        uint8_t *to = input.planes[plane];
        const int stride = input.stride[plane];
        const int w = plane == 0 ? width : chroma_width, h = plane == 0 ? height : chroma_height;
        if (key.monochrome && plane != 0) {
            for (int y = 0; y < h; y++) memset(to + (size_t) y * (size_t) stride, 128, (size_t) w);
            continue;
        }
        int from_stride = 0;
        const uint8_t *from = heif_image_get_plane_readonly(image, (enum heif_channel) plane, &from_stride);
        if (!from || heif_image_get_width(image, (enum heif_channel) plane) != w ||
            heif_image_get_height(image, (enum heif_channel) plane) != h) {
            aom_img_free(&input);
            return failure(heif_error_Usage_error, heif_suberror_Unspecified, "artcache-aom: planes do not match the chroma format");
        }
        for (int y = 0; y < h; y++) memcpy(to + (size_t) y * (size_t) stride, from + (size_t) y * (size_t) from_stride, (size_t) w);
    }

    struct pooled *entry = take(&key);
    if (!entry) entry = make(&key);
    if (!entry) {
        aom_img_free(&input);
        return failure(heif_error_Encoder_plugin_error, heif_suberror_Unspecified, "artcache-aom: cannot make a libaom encoder");
    }
    aom_codec_control(&entry->codec, AOME_SET_CQ_LEVEL, ((100 - encoder->quality) * 63 + 50) / 100);
    /* Every image a key frame of its own: a kept encoder writes the same
     * bytes as a fresh one (Tests: EncoderTests). */
    aom_codec_err_t result = aom_codec_encode(&entry->codec, &input, 0, 1, AOM_EFLAG_FORCE_KF);
    aom_img_free(&input);
    if (result == AOM_CODEC_OK) {
        const aom_codec_cx_pkt_t *packet;
        aom_codec_iter_t iterator = NULL;
        while ((packet = aom_codec_get_cx_data(&entry->codec, &iterator)) != NULL) {
            if (packet->kind != AOM_CODEC_CX_FRAME_PKT) continue;
            uint8_t *grown = realloc(encoder->data, encoder->size + packet->data.frame.sz);
            if (!grown) {
                result = AOM_CODEC_MEM_ERROR;
                break;
            }
            memcpy(grown + encoder->size, packet->data.frame.buf, packet->data.frame.sz);
            encoder->data = grown;
            encoder->size += packet->data.frame.sz;
        }
    }
    if (result != AOM_CODEC_OK || encoder->size == 0) {
        /* Its state is unknown after a failure: never reused. */
        discard(entry);
        free(encoder->data);
        encoder->data = NULL;
        encoder->size = 0;
        return failure(heif_error_Encoder_plugin_error, heif_suberror_Unspecified, "artcache-aom: libaom could not encode the frame");
    }
    entry->images++;
    give_back(entry);
    return ok;
}

static struct heif_error get_compressed_data(void *raw, uint8_t **data, int *size, enum heif_encoded_data_type *type) {
    struct encoder *encoder = raw;
    if (type) *type = heif_encoded_data_type_HEVC_image; /* unused for AV1 */
    if (encoder->handed || !encoder->data) {
        *data = NULL;
        *size = 0;
        return ok;
    }
    encoder->handed = 1;
    *data = encoder->data;
    *size = (int) encoder->size;
    return ok;
}

static const struct heif_encoder_plugin plugin = {
    .plugin_api_version = 3,
    .compression_format = heif_compression_AV1,
    .id_name = "artcache-aom",
    .priority = 1,
    .supports_lossy_compression = 1,
    .supports_lossless_compression = 1,
    .get_plugin_name = plugin_name,
    .init_plugin = NULL,
    .cleanup_plugin = NULL,
    .new_encoder = new_encoder,
    .free_encoder = free_encoder,
    .set_parameter_quality = set_quality,
    .get_parameter_quality = get_quality,
    .set_parameter_lossless = set_lossless,
    .get_parameter_lossless = get_lossless,
    .set_parameter_logging_level = set_logging,
    .get_parameter_logging_level = get_logging,
    .list_parameters = list_parameters,
    .set_parameter_integer = set_integer,
    .get_parameter_integer = get_integer,
    .set_parameter_boolean = set_boolean,
    .get_parameter_boolean = get_boolean,
    .set_parameter_string = set_string,
    .get_parameter_string = get_string,
    .query_input_colorspace = query_input_colorspace,
    .encode_image = encode_image,
    .get_compressed_data = get_compressed_data,
    .query_input_colorspace2 = query_input_colorspace2,
    .query_encoded_size = NULL,
};

static pthread_once_t registered = PTHREAD_ONCE_INIT;
static int registration = -1;

static void register_once(void) {
    registration = heif_register_encoder_plugin(&plugin).code == heif_error_Ok ? 0 : -1;
}

int cheif_aom_register(void) {
    pthread_once(&registered, register_once);
    return registration;
}

const char *cheif_aom_id(void) { return plugin.id_name; }
