// Boost.JSON compiled into the fuzz binaries from its header-only source, so the sanitizers
// and coverage instrumentation see it too (the system library is built without them).
#include <boost/json/src.hpp>
