# Run by ctest when a tool the tests need is missing: fails loudly, never a silent pass.
message(FATAL_ERROR "\n*** MISSING: ${WHAT} ***\n")
