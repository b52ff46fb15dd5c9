#ifndef CHEIF_AOM_H
#define CHEIF_AOM_H
/* An AV1 encoder plugin for libheif ("artcache-aom") that keeps libaom
 * encoders between images. libheif's own aom plugin makes and frees a
 * libaom encoder per image: at thumbnail sizes that was 6% of a cold
 * browser round's CPU (aom_codec_enc_init and the first frame's
 * allocations; an encoder kept and given the next image of the same size
 * skips both, and its bytes are the same as a fresh encoder's).
 *
 * Encoders wait in one process-wide pool, keyed by everything libaom fixes
 * when an encoder is made (size, chroma format, speed, threads, tune,
 * quantiser bounds, lossless, colour description, extra `aom:` options);
 * the quality is set per image. At most CHEIF_AOM_POOL_MAX idle encoders,
 * each at most CHEIF_AOM_POOL_MAX_PIXELS (larger ones are freed after
 * their image); the least recently used goes first. An encoder is never
 * shared: a thread takes it out of the pool for one image and puts it back.
 * Only 8-bit images; what the plugin does not take is a typed libheif
 * error. libheif makes the container (av1C from the sequence header).
 *
 * Selected by name (heif_get_encoder_descriptors with cheif_aom_id());
 * registered at a priority below libheif's own aom plugin, so a caller
 * that asks libheif for "an AV1 encoder" (libvips' heifsave) still gets
 * that one. */

#define CHEIF_AOM_POOL_MAX 4
#define CHEIF_AOM_POOL_MAX_PIXELS (512 * 512)

/* Registers the plugin with libheif, once (call after heif_init).
 * Returns 0, or -1 when libheif refused it. */
int cheif_aom_register(void);

/* The plugin's id_name. */
const char *cheif_aom_id(void);

/* Idle encoders in the pool now, and libaom encoders made since the
 * process started (tests; /metrics could show them). */
int cheif_aom_idle(void);
long cheif_aom_made(void);

/* The most images one idle encoder of that size has encoded (0: none idle). */
long cheif_aom_images_of_idle(int width, int height);

/* Frees every idle encoder (tests, and a process that is done encoding). */
void cheif_aom_drain(void);

#endif
