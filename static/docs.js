// GET /docs: renders /openapi.json as a readable page — routes grouped by tag, each with
// its parameters, request body and responses, then the shared schemas. Every text from
// the document goes in through textContent: nothing in it is parsed as HTML.
"use strict";
(function () {
  var doc;

  function el(tag, cls, kids) {
    var e = document.createElement(tag);
    if (cls) e.className = cls;
    [].concat(kids || []).forEach(function (k) {
      if (k != null) e.appendChild(typeof k === "string" ? document.createTextNode(k) : k);
    });
    return e;
  }

  // Text with `code` spans (the little Markdown the document uses).
  function inline(text, tag, cls) {
    var e = el(tag || "span", cls);
    String(text || "").split("`").forEach(function (part, i) {
      e.appendChild(i % 2 ? el("code", null, part) : document.createTextNode(part));
    });
    return e;
  }

  // Paragraphs split at blank lines.
  function prose(text) {
    var box = el("div", "prose");
    String(text || "").split(/\n\n+/).forEach(function (para) { box.appendChild(inline(para, "p")); });
    return box;
  }

  function refName(ref) { return ref.split("/").pop(); }

  function resolve(obj) {
    var seen = 0;
    while (obj && obj.$ref && seen++ < 10) {
      var node = doc;
      obj.$ref.replace(/^#\//, "").split("/").forEach(function (k) { node = node && node[k]; });
      obj = node;
    }
    return obj || {};
  }

  // A schema as a short type expression with nested properties listed below it.
  function schema(s, depth) {
    s = s || {};
    depth = depth || 0;
    if (s.$ref) {
      var a = el("a", "ref", refName(s.$ref));
      a.href = "#schema-" + refName(s.$ref);
      return a;
    }
    var span = el("span", "type");
    function join(list, sep) {
      list.forEach(function (x, i) {
        if (i) span.appendChild(document.createTextNode(sep));
        span.appendChild(schema(x, depth));
      });
    }
    if (s.oneOf || s.anyOf) join(s.oneOf || s.anyOf, " | ");
    else if (s.allOf) join(s.allOf, " & ");
    else if ("const" in s) span.textContent = JSON.stringify(s.const);
    else if (s.required && !s.type && !s.properties) span.textContent = "required: " + s.required.join(", ");
    else if (s.enum) span.textContent = s.enum.map(function (v) { return JSON.stringify(v); }).join(" | ");
    else if (s.type === "array") {
      span.appendChild(document.createTextNode("array of "));
      span.appendChild(schema(s.items, depth));
    } else span.textContent = [].concat(s.type || "any").join(" | ");
    if (s.description) span.appendChild(inline(" — " + s.description, "span", "desc"));
    if (s.properties && depth < 6) {
      var ul = el("ul", "props");
      var req = s.required || [];
      Object.keys(s.properties).forEach(function (name) {
        ul.appendChild(el("li", null, [
          el("code", req.indexOf(name) >= 0 ? "name req" : "name", name), ": ",
          schema(s.properties[name], depth + 1)
        ]));
      });
      span.appendChild(ul);
    }
    return span;
  }

  // Media types and their schemas; `expand` shows a referenced schema's fields in place.
  function content(c, expand) {
    var box = el("div", "content");
    Object.keys(c || {}).forEach(function (type) {
      var s = c[type].schema || {};
      var row = el("div", null, [el("span", "mime", type), " ", schema(s)]);
      if (expand) {
        (s.allOf || [s]).forEach(function (part) { if (part.$ref) row.appendChild(el("div", "expanded", schema(resolve(part), 1))); });
      }
      box.appendChild(row);
    });
    return box;
  }

  function operation(path, method, op, shared) {
    var params = (shared || []).concat(op.parameters || []).map(resolve);
    var body = el("div", "body");
    if (op.description) body.appendChild(prose(op.description));
    if (params.length) {
      body.appendChild(el("h4", null, "Parameters"));
      var ul = el("ul", "params");
      params.forEach(function (p) {
        ul.appendChild(el("li", null, [
          el("code", p.required ? "name req" : "name", p.name), " (" + p["in"] + ") ",
          schema(p.schema), p.description ? inline(" — " + p.description, "span", "desc") : null
        ]));
      });
      body.appendChild(ul);
    }
    if (op.requestBody) {
      var rb = resolve(op.requestBody);
      body.appendChild(el("h4", null, "Request body" + (rb.required ? "" : " (optional)")));
      body.appendChild(content(rb.content, true));
    }
    body.appendChild(el("h4", null, "Responses"));
    var rs = el("ul", "responses");
    Object.keys(op.responses || {}).forEach(function (code) {
      var r = resolve(op.responses[code]);
      rs.appendChild(el("li", null, [
        el("span", "status s" + code.charAt(0), code), inline(" " + (r.description || "")),
        content(r.content, code.charAt(0) === "2")
      ]));
    });
    body.appendChild(rs);
    var d = el("details", "op", [el("summary", null, [
      el("span", "method " + method, method.toUpperCase()), el("code", "path", path),
      inline(op.summary, "span", "summary")
    ]), body]);
    d.id = method + "-" + path.replace(/[^a-zA-Z0-9]+/g, "-");
    return d;
  }

  function render() {
    var main = document.getElementById("api");
    var toc = document.getElementById("toc");
    main.textContent = "";
    document.getElementById("title").textContent = doc.info.title + " API " + doc.info.version;
    document.getElementById("intro").appendChild(prose(doc.info.description));
    var groups = {}, order = (doc.tags || []).map(function (t) { return t.name; });
    Object.keys(doc.paths).forEach(function (path) {
      var item = doc.paths[path];
      ["get", "post", "put", "patch", "delete"].forEach(function (m) {
        if (!item[m]) return;
        var tag = (item[m].tags || ["other"])[0];
        if (order.indexOf(tag) < 0) order.push(tag);
        (groups[tag] = groups[tag] || []).push(operation(path, m, item[m], item.parameters));
      });
    });
    order.forEach(function (tag) {
      if (!groups[tag]) return;
      var sec = el("section", null, el("h2", null, tag));
      sec.id = "tag-" + tag;
      groups[tag].forEach(function (op) { sec.appendChild(op); });
      main.appendChild(sec);
      var a = el("a", null, tag);
      a.href = "#tag-" + tag;
      toc.appendChild(a);
    });
    var schemas = (doc.components || {}).schemas || {};
    var sec = el("section", null, el("h2", null, "schemas"));
    sec.id = "schemas";
    Object.keys(schemas).forEach(function (name) {
      var d = el("div", "schema", [el("h3", null, name), schema(schemas[name])]);
      d.id = "schema-" + name;
      sec.appendChild(d);
    });
    main.appendChild(sec);
    var a = el("a", null, "schemas");
    a.href = "#schemas";
    toc.appendChild(a);
    // A link to a route opens it.
    var target = location.hash && document.getElementById(location.hash.slice(1));
    if (target) {
      if (target.tagName === "DETAILS") target.open = true;
      target.scrollIntoView();
    }
  }

  fetch("/openapi.json", { credentials: "same-origin" })
    .then(function (r) {
      if (!r.ok) throw new Error("GET /openapi.json: HTTP " + r.status);
      return r.json();
    })
    .then(function (d) { doc = d; render(); })
    .catch(function (e) {
      var main = document.getElementById("api");
      main.textContent = "";
      main.appendChild(el("p", "error", "Cannot show the API: " + e.message));
    });
})();
