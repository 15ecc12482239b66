/* Prints an arm64 Linux style /proc/cpuinfo for N processors, as the emulated CPU
 * (qemu-aarch64 -cpu / QEMU_CPU) reports itself: Features from AT_HWCAP/AT_HWCAP2 (names
 * as in Linux's arch/arm64/kernel/cpuinfo.c), the CPU fields from MIDR_EL1.
 * `fake_cpuinfo N` prints the cpuinfo; `fake_cpuinfo midr` prints MIDR_EL1 as sysfs does.
 * qemu-user 7.2 passes /proc/cpuinfo through from the x86 host, where torch's cpuinfo
 * library finds no ARM processor and crashes (SIGSEGV in cpuinfo_arm_linux_init). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>

static const char *hwcap[32] = {"fp", "asimd", "evtstrm", "aes", "pmull", "sha1", "sha2", "crc32",
  "atomics", "fphp", "asimdhp", "cpuid", "asimdrdm", "jscvt", "fcma", "lrcpc", "dcpop", "sha3",
  "sm3", "sm4", "asimddp", "sha512", "sve", "asimdfhm", "dit", "uscat", "ilrcpc", "flagm", "ssbs",
  "sb", "paca", "pacg"};
static const char *hwcap2[34] = {"dcpodp", "sve2", "sveaes", "svepmull", "svebitperm", "svesha3",
  "svesm4", "flagm2", "frint", "svei8mm", "svef32mm", "svef64mm", "svebf16", "i8mm", "bf16",
  "dgh", "rng", "bti", "mte", "ecv", "afp", "rpres", "mte3", "sme", "smei16i64", "smef64f64",
  "smei8i32", "smef16f32", "smeb16f32", "smef32f32", "smefa64", "wfxt", "ebf16", "sveebf16"};

int main(int argc, char **argv) {
  unsigned long midr, h1 = getauxval(AT_HWCAP), h2 = getauxval(AT_HWCAP2);
  __asm__ volatile("mrs %0, midr_el1" : "=r"(midr));
  if (argc > 1 && strcmp(argv[1], "midr") == 0) { printf("0x%016lx\n", midr); return 0; }
  int n = argc > 1 ? atoi(argv[1]) : 1;
  for (int p = 0; p < n; ++p) {
    printf("processor\t: %d\nBogoMIPS\t: 50.00\nFeatures\t:", p);
    for (int i = 0; i < 32; ++i) if (h1 >> i & 1) printf(" %s", hwcap[i]);
    for (int i = 0; i < 34; ++i) if (h2 >> i & 1) printf(" %s", hwcap2[i]);
    printf("\nCPU implementer\t: 0x%02lx\nCPU architecture: 8\nCPU variant\t: 0x%lx\n"
           "CPU part\t: 0x%03lx\nCPU revision\t: %lu\n\n",
           midr >> 24 & 0xff, midr >> 20 & 0xf, midr >> 4 & 0xfff, midr & 0xf);
  }
  return 0;
}
