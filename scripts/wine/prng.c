/* Wine 8.0 lacks bcryptprimitives.dll, from which Rust's standard library imports ProcessPrng
 * (Windows 10 and later have it). This stand-in, placed next to a Windows binary run under Wine
 * in the tests, fills the buffer with RtlGenRandom (advapi32's SystemFunction036), the call
 * Rust's std used before ProcessPrng. Real Windows never loads it. */
#include <windows.h>

BOOLEAN WINAPI SystemFunction036(PVOID buffer, ULONG length);

__declspec(dllexport) BOOL WINAPI ProcessPrng(PBYTE data, SIZE_T len) {
  while (len > 0) {
    ULONG n = len > 0x40000000 ? 0x40000000 : (ULONG)len;
    if (!SystemFunction036(data, n)) return FALSE;
    data += n;
    len -= n;
  }
  return TRUE;
}
