// The login page. The form is sent with fetch: a native form POST from a page served
// with `Referrer-Policy: no-referrer` carries `Origin: null`, which the server's
// cross-site check refuses, while fetch sends the page's real origin. A wrong token
// comes back as a redirect to /login?failed=1.
'use strict';
const form = document.querySelector('form'), failed = document.getElementById('failed');
if (/[?&]failed=1/.test(location.search)) failed.hidden = false;
form.addEventListener('submit', async e => {
  e.preventDefault();
  try {
    const r = await fetch('/login', { method: 'POST', body: new URLSearchParams(new FormData(form)) });
    if (/[?&]failed=1/.test(r.url)) {
      failed.hidden = false;
      form.token.select();
      return;
    }
    if (!r.ok) {
      const text = await r.text();
      let msg = `HTTP ${r.status}`;
      try { msg = JSON.parse(text).error.message; } catch { /* not JSON */ }
      throw new Error(msg);
    }
    location.href = '/';
  } catch (err) {
    failed.textContent = err.message;
    failed.hidden = false;
  }
});
