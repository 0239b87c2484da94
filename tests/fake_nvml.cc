// A stand-in for libnvidia-ml.so.1 with the seven functions GpuMonitor uses
// and fixed answers, so that the dlopen path is tested without a GPU
// (tests/ops_gpu_metrics_test.cc). Device 0 only.
extern "C" {

struct FakeMemory {
  unsigned long long total, free, used;
};
struct FakeUtilization {
  unsigned int gpu, memory;
};

static int fake_device;

int nvmlInit_v2() { return 0; }
int nvmlShutdown() { return 0; }
int nvmlDeviceGetHandleByIndex_v2(unsigned int index, void** device) {
  if (index != 0) return 2;  // NVML_ERROR_INVALID_ARGUMENT
  *device = &fake_device;
  return 0;
}
int nvmlDeviceGetMemoryInfo(void* device, FakeMemory* memory) {
  if (device != &fake_device) return 2;
  memory->total = 80ull << 30;
  memory->used = 3ull << 30;
  memory->free = memory->total - memory->used;
  return 0;
}
int nvmlDeviceGetUtilizationRates(void* device, FakeUtilization* utilization) {
  if (device != &fake_device) return 2;
  utilization->gpu = 42;
  utilization->memory = 17;
  return 0;
}

static int Copy(const char* text, char* out, unsigned int length) {
  unsigned int i = 0;
  for (; text[i] != '\0'; ++i) {
    if (i + 1 >= length) return 7;  // NVML_ERROR_INSUFFICIENT_SIZE
    out[i] = text[i];
  }
  out[i] = '\0';
  return 0;
}
int nvmlDeviceGetUUID(void* device, char* uuid, unsigned int length) {
  if (device != &fake_device) return 2;
  return Copy("GPU-0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0", uuid, length);
}
int nvmlDeviceGetName(void* device, char* name, unsigned int length) {
  if (device != &fake_device) return 2;
  return Copy("NVIDIA H100 80GB HBM3 \"fake\"", name, length);  // a quote to escape
}

}  // extern "C"
