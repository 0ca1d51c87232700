// The login page. The form is sent with fetch: a native form POST from a page served
// with `Referrer-Policy: no-referrer` carries `Origin: null`, which the server's
// cross-site check refuses, while fetch sends the page's real origin. A wrong token
// comes back as a redirect to /login?failed=1.
//
// The sign-in link `evolve serve` prints is /login#token=…: the fragment never leaves
// the browser (no request line, no log, no Referer). It is taken out of the address bar
// and this history entry at once, then posted like a pasted token. `evolve open` hands
// the browser /login#code=… instead: a one-time code, posted the same way.
'use strict';
const form = document.querySelector('form'), failed = document.getElementById('failed');
if (/[?&]failed=1/.test(location.search)) failed.hidden = false;

async function signIn(body = new URLSearchParams(new FormData(form))) {
  try {
    const r = await fetch('/login', { method: 'POST', body });
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
    location.replace('/');
  } catch (err) {
    failed.textContent = err.message;
    failed.hidden = false;
  }
}

form.addEventListener('submit', e => {
  e.preventDefault();
  signIn();
});

// On load, and when the link is opened in a tab already showing this page (only the
// fragment changes then, and the page is not loaded again).
function fromLink() {
  const linked = new URLSearchParams(location.hash.slice(1));
  const token = linked.get('token'), code = linked.get('code');
  if (!token && !code) return;
  history.replaceState(null, '', location.pathname + location.search);
  if (token) {
    form.token.value = token;
    signIn();
  } else {
    signIn(new URLSearchParams({ code }));
  }
}
window.addEventListener('hashchange', fromLink);
fromLink();
