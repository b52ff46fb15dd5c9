// libjpeg-turbo's TurboJPEG API (Debian: libturbojpeg0-dev). Every call the
// fast path uses is non-variadic and reports errors per handle
// (tjGetErrorStr2), so Swift calls it directly: no shim functions.
#include <turbojpeg.h>
