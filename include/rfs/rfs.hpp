// Umbrella header: every public rfs header. Embedders may include narrower
// headers instead.
#pragma once

#include "rfs/core/base36.hpp"
#include "rfs/core/base64.hpp"
#include "rfs/core/byte_reader.hpp"
#include "rfs/core/clock.hpp"
#include "rfs/core/codec_util.hpp"
#include "rfs/core/crc32.hpp"
#include "rfs/core/errors.hpp"
#include "rfs/core/http.hpp"
#include "rfs/core/random_access.hpp"
#include "rfs/core/status_macros.hpp"
#include "rfs/core/str_cat.hpp"
