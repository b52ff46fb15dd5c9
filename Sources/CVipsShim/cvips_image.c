#define _GNU_SOURCE
#include "cvips_internal.h"
#include <string.h>

/* Opening encoded bytes (header only) with the loaders the caller allows. */

/* The CVIPS_LOADER_* bit of a loader, by the class name
 * vips_foreign_find_load_buffer returns ("VipsForeignLoadJpegBuffer"); 0 for
 * any loader artcache never uses. */
int cvips__loader_bit(const char *loader) {
    static const struct { const char *prefix; int bit; } table[] = {
        { "VipsForeignLoadJpeg", CVIPS_LOADER_JPEG }, { "VipsForeignLoadPng", CVIPS_LOADER_PNG },
        { "VipsForeignLoadNsgif", CVIPS_LOADER_GIF }, { "VipsForeignLoadWebp", CVIPS_LOADER_WEBP },
        { "VipsForeignLoadTiff", CVIPS_LOADER_TIFF }, { "VipsForeignLoadHeif", CVIPS_LOADER_HEIF },
        { "VipsForeignLoadSvg", CVIPS_LOADER_SVG }, { "VipsForeignLoadMagick", CVIPS_LOADER_MAGICK },
    };
    for (size_t i = 0; i < sizeof(table) / sizeof(table[0]); i++) {
        if (strncmp(loader, table[i].prefix, strlen(table[i].prefix)) == 0) return table[i].bit;
    }
    return 0;
}

/* `loader` is a class name ("VipsForeignLoadNsgifBuffer") or a nickname. */
static int is_animation_loader(const char *loader) {
    return strcasestr(loader, "gif") != NULL || strcasestr(loader, "webp") != NULL;
}

/* To 8-bit sRGB (CMYK, grey, 16-bit and Lab included). */
int cvips__to_srgb(VipsImage *parent, VipsImage *in, VipsImage **out) {
    VipsImage **t = (VipsImage **) vips_object_local_array(VIPS_OBJECT(parent), 3);
    VipsInterpretation kind = vips_image_guess_interpretation(in);
    VipsImage *current = in;
    if (kind != VIPS_INTERPRETATION_sRGB || in->BandFmt != VIPS_FORMAT_UCHAR) {
        if (vips_colourspace(current, &t[0], VIPS_INTERPRETATION_sRGB, NULL)) return -1;
        current = t[0];
    }
    if (current->BandFmt != VIPS_FORMAT_UCHAR) {
        if (vips_cast_uchar(current, &t[1], NULL)) return -1;
        current = t[1];
    }
    *out = current;
    return 0;
}

void cvips__profile_to_srgb(VipsImage *parent, VipsImage *in, VipsImage **out) {
    *out = in;
    if (!vips_image_get_typeof(in, VIPS_META_ICC_NAME) || in->Bands < 3 || in->Coding != VIPS_CODING_NONE) return;
    VipsImage **t = (VipsImage **) vips_object_local_array(VIPS_OBJECT(parent), 1);
    /* The profile is parsed (and checked against the image) here, the
     * pixels transformed later; a profile lcms cannot use leaves the image
     * as it was (rendered uncorrected, as before colour management).
     * Perceptual: the intent every profile carries. LUT profiles may have no
     * other (jpegli's XYB, a scanner's): asked for relative colorimetric,
     * libvips passes their numbers through unconverted; matrix profiles
     * (Display P3, Adobe RGB) give the same result under either. */
    if (vips_icc_transform(in, &t[0], "srgb", "embedded", TRUE, "intent", VIPS_INTENT_PERCEPTUAL, "depth", 8, NULL)) {
        vips_error_clear();
        return;
    }
    *out = t[0];
}

int cvips__has_rgb_profile(VipsImage *in) {
    const void *data = NULL;
    size_t length = 0;
    if (!vips_image_get_typeof(in, VIPS_META_ICC_NAME) || vips_image_get_blob(in, VIPS_META_ICC_NAME, &data, &length)) return 0;
    return data && length >= 132 && memcmp((const char *) data + 16, "RGB ", 4) == 0;
}

static int is_magick_bmp_or_ico(VipsImage *image) {
    const char *format = NULL;
    if (vips_image_get_typeof(image, "magick-format") == 0 || vips_image_get_string(image, "magick-format", &format)) return 0;
    static const char *accepted[] = { "BMP", "BMP2", "BMP3", "ICO", "ICON" };
    for (size_t i = 0; i < sizeof(accepted) / sizeof(accepted[0]); i++) {
        if (g_ascii_strcasecmp(format, accepted[i]) == 0) return 1;
    }
    return 0;
}

static cvips_image *open_magick(const void *buffer, size_t length, int *error_kind) {
    cvips_image *image = g_new0(cvips_image, 1);
    image->buffer = g_memdup2(buffer, length);
    image->length = length;
    image->magick = 1;
    g_strlcpy(image->loader, "VipsForeignLoadMagickBuffer", sizeof(image->loader));
    if (vips_magickload_buffer(image->buffer, length, &image->image, NULL)) {
        image->image = NULL;
        *error_kind = CVIPS_DECODE;
        cvips_image_free(image);
        return NULL;
    }
    if (!is_magick_bmp_or_ico(image->image)) {
        *error_kind = CVIPS_UNSUPPORTED;
        cvips_image_free(image);
        return NULL;
    }
    return image;
}

cvips_image *cvips_image_open(const void *buffer, size_t length, int allowed_loaders, int *error_kind) {
    *error_kind = CVIPS_OK;
    if (allowed_loaders == CVIPS_LOADER_MAGICK) return open_magick(buffer, length, error_kind);
    allowed_loaders &= ~CVIPS_LOADER_MAGICK;  /* never by probing */
    /* The same probe vips_thumbnail_buffer makes later, on the same bytes:
     * the loader checked here is the one that decodes. */
    const char *loader = vips_foreign_find_load_buffer(buffer, length);
    if (!loader || !(cvips__loader_bit(loader) & allowed_loaders)) {
        vips_error_clear();
        *error_kind = CVIPS_UNSUPPORTED;
        return NULL;
    }
    cvips_image *image = g_new0(cvips_image, 1);
    image->buffer = g_memdup2(buffer, length);
    image->length = length;
    g_strlcpy(image->loader, loader, sizeof(image->loader));
    /* The header only: nothing is decoded here. */
    image->image = vips_image_new_from_buffer(image->buffer, length, "", "access", VIPS_ACCESS_SEQUENTIAL, NULL);
    if (!image->image) {
        *error_kind = CVIPS_DECODE;
        cvips_image_free(image);
        return NULL;
    }
    return image;
}

void cvips_image_free(cvips_image *image) {
    if (!image) return;
    if (image->image) g_object_unref(image->image);
    g_free(image->buffer);
    g_free(image);
}

void cvips_image_header(const cvips_image *image, cvips_header_t *out) {
    memset(out, 0, sizeof(*out));
    VipsImage *i = image->image;
    out->width = vips_image_get_width(i);
    out->height = vips_image_get_page_height(i);
    out->bands = vips_image_get_bands(i);
    out->pages = is_animation_loader(image->loader) ? vips_image_get_n_pages(i) : 1;
    if (out->pages < 1) out->pages = 1;
    out->orientation = vips_image_get_orientation(i);
    out->has_alpha = vips_image_hasalpha(i);
    out->has_exif = vips_image_get_typeof(i, VIPS_META_EXIF_NAME) != 0;
    out->has_icc = vips_image_get_typeof(i, VIPS_META_ICC_NAME) != 0;
    out->interpretation = (int) vips_image_get_interpretation(i);
    g_strlcpy(out->loader, image->loader, sizeof(out->loader));
}
