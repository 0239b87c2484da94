// Replays fuzz corpora through a target's LLVMFuzzerTestOneInput without
// libFuzzer, so normal (gcc) builds check every kept input on each test
// run: `fuzz_replay_wav tests/fuzz/corpus/wav`. Exit 0 when every file ran
// (a finding aborts the process), 1 when a directory is missing or empty.
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

int main(int argc, char** argv) {
  int files = 0;
  for (int i = 1; i < argc; ++i) {
    std::error_code error;
    for (const auto& entry : std::filesystem::directory_iterator(argv[i], error)) {
      if (!entry.is_regular_file()) continue;
      std::ifstream in(entry.path(), std::ios::binary);
      const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
      LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
      ++files;
    }
    if (error) {
      std::fprintf(stderr, "cannot read corpus %s: %s\n", argv[i], error.message().c_str());
      return 1;
    }
  }
  std::printf("replayed %d inputs\n", files);
  return files > 0 ? 0 : 1;
}
