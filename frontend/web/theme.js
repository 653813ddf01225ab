// Light and dark: the system's choice (prefers-color-scheme) unless the person picks one.
// theme-init.js applies the stored choice before the first paint; style.css reads
// html[data-theme].

const key = 'walletsync-theme';
const dark = matchMedia('(prefers-color-scheme: dark)');

/** theme is the person's choice: "light", "dark", or "" for the system's. */
export const theme = () => document.documentElement.dataset.theme ?? '';

/** effectiveTheme is what shows: "light" or "dark". */
export const effectiveTheme = () => theme() || (dark.matches ? 'dark' : 'light');

/** setTheme applies and remembers a choice, and tells listeners (a "themechange" event). */
export function setTheme(t) {
  document.documentElement.dataset.theme = t;
  try {
    if (t) localStorage.setItem(key, t);
    else localStorage.removeItem(key);
  } catch {
    // storage may be off (a private window): the choice lasts for this page
  }
  dispatchEvent(new Event('themechange'));
}

dark.addEventListener('change', () => dispatchEvent(new Event('themechange')));
