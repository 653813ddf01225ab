// Applies the stored theme before the first paint (index.html loads this file as a
// blocking script in its head, before the stylesheet is used). It is a file rather than
// an inline script so that the Content-Security-Policy allows only the dashboard's own
// files (frontend.ContentSecurityPolicy).
try {
  document.documentElement.dataset.theme = localStorage.getItem('walletsync-theme') || '';
} catch {
  // storage may be off (a private window): the system's theme shows
}
