// libheif's encoding API (Debian: libheif-dev, which libvips-dev already
// pulls in), for the fast path's AVIF outputs. Every call is non-variadic
// and returns its error by value (a message owned by the context or
// static, copied at once), so Swift calls it directly: no shim functions.
#include <libheif/heif.h>
