// Imported first, before anything that formats numbers at load time (uPlot does). Under a
// POSIX locale (LANG=C, common on servers and in CI) WebKitGTK reports `navigator.language` as
// "C", which Intl rejects with a RangeError — the whole window stayed blank. Such a tag is
// replaced by the language-neutral default.
function usable(tag: string): boolean {
  try {
    new Intl.NumberFormat(tag);
    return true;
  } catch {
    return false;
  }
}

if (typeof navigator !== 'undefined' && !usable(navigator.language)) {
  Object.defineProperty(navigator, 'language', { value: 'en-US', configurable: true });
  Object.defineProperty(navigator, 'languages', { value: ['en-US'], configurable: true });
}

export {};
