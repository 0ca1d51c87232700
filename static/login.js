// The login page: the server sends a wrong token back to /login?failed=1; say so.
'use strict';
if (/[?&]failed=1/.test(location.search)) document.getElementById('failed').hidden = false;
