// Intentionally empty: the target only exports CFuzzerDriver.h (see there why).
#include "CFuzzerDriver.h"
