// `kiln report` and `kiln graph`: the structured trace (KILN_TRACE=DIR)
// turned into one self-contained HTML page, or one graph's picture.
#pragma once

namespace kiln::tools {

/// kiln report DIR [-o FILE]: returns the process's exit status.
int report_command(int argc, char** argv);
/// kiln graph DIR [--function NAME] [--key KEY] [--svg]
int graph_command(int argc, char** argv);

}  // namespace kiln::tools
