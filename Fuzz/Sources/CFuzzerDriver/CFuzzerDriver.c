// Nothing to define: the header declares a function of the libFuzzer runtime.
#include "CFuzzerDriver.h"
