// libwebp's simple encoding API (Debian: libwebp-dev, which libvips-dev
// already pulls in), for the fast path's WebP outputs.
#include <webp/encode.h>
