// CLI11 without <iostream>'s static initialiser. CLI11's headers include <iostream>, whose static
// std::ios_base::Init object (GCC 12) constructs the eight standard streams before main, for
// every run, though redlock-run writes only with fmt and stdio: 6 page faults and ~20 µs of a
// run's start-up. Declaring the stream objects under <iostream>'s own include guard keeps CLI11
// compiling without that object. Safe only while nothing in the program uses std::cout and
// friends: a test checks that the binary does not even link them (tests/e2e/packaging.bats).
#pragma once

#ifdef _GLIBCXX_IOSTREAM
#error "cli11.hpp must be included before anything that includes <iostream>"
#endif

#include <istream>
#include <ostream>

#define _GLIBCXX_IOSTREAM 1
namespace std {
extern istream cin;
extern ostream cout;
extern ostream cerr;
extern ostream clog;
extern wistream wcin;
extern wostream wcout;
extern wostream wcerr;
extern wostream wclog;
}  // namespace std

#include <CLI/CLI.hpp>
