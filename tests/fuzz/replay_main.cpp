// A main for the fuzz targets without libFuzzer: feeds each file given, and every file of each
// directory given, to LLVMFuzzerTestOneInput once. CMake links it to every target so that each
// build (release, ASan, TSan+UBSan) replays the seed corpus as a ctest test in seconds; a
// target's own checks abort on a finding. tests/fuzz/run builds the same targets with libFuzzer.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size);

namespace {

void replay(const std::filesystem::path& file) {
    std::ifstream in(file, std::ios::binary);
    std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    LLVMFuzzerTestOneInput(reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size());
}

}  // namespace

int main(int argc, char** argv) {
    std::vector<std::filesystem::path> files;
    for (int i = 1; i < argc; ++i) {
        std::filesystem::path arg(argv[i]);
        if (!std::filesystem::is_directory(arg)) {
            files.push_back(arg);
            continue;
        }
        std::vector<std::filesystem::path> inside;
        for (const auto& entry : std::filesystem::directory_iterator(arg))
            if (entry.is_regular_file()) inside.push_back(entry.path());
        std::sort(inside.begin(), inside.end());  // the same order on every run
        files.insert(files.end(), inside.begin(), inside.end());
    }
    for (const auto& file : files) {
        if (!std::filesystem::is_regular_file(file)) {
            std::fprintf(stderr, "not a file or directory: %s\n", file.c_str());
            return 2;
        }
        replay(file);
    }
    std::printf("%zu input(s) replayed\n", files.size());
    return 0;
}
