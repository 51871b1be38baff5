// The paths a test target was built with (the source and build folders, tools, jars), looked up at
// run time instead of written into the compile line: a path differs from clone to clone, and a
// compile line that named one would miss the compiler cache in every fresh clone. CMake's
// rfs_build_paths() defines each macro (RFS_SOURCE_DIR, RFS_DOCUMENTS_TOOL, ...) as a call to
// RfsBuildPath("<its name>") and generates the target's table of values.
#pragma once

/// This build's value of the path called `name`; aborts, naming it, when the target has none.
const char* RfsBuildPath(const char* name);
