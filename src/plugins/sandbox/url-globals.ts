/**
 * `URL` and `URLSearchParams` inside a plugin's isolate, in plain JavaScript (the isolate has no
 * Node API and no reference to the daemon). The WHATWG parser's common paths: special schemes
 * (http, https, ws, wss, ftp, file) with credentials, host (lowercased; IPv6 in brackets; non-ASCII
 * names to punycode, without the full UTS #46 mapping), default ports dropped, dot segments
 * resolved, percent-encoding per component; other schemes keep an opaque path (mailto:, data:).
 * Relative references resolve against a base. The search params stay in step with `search`.
 */
export const URL_GLOBALS = String.raw`(g) => {
  "use strict";
  const define = (name, value) => Object.defineProperty(g, name, { value, writable: true, configurable: true });
  const SPECIAL = { "http:": "80", "https:": "443", "ws:": "80", "wss:": "443", "ftp:": "21", "file:": "" };
  const enc = new g.TextEncoder();
  const encodeSet = (extra) => (s) => {
    let out = "";
    for (const ch of s) {
      const c = ch.codePointAt(0);
      if (c < 0x21 || c > 0x7e || extra.includes(ch)) for (const b of enc.encode(ch)) out += "%" + b.toString(16).toUpperCase().padStart(2, "0");
      else out += ch;
    }
    return out;
  };
  const encodePath = encodeSet('"#<>?\u0060{}');
  const encodeQuery = encodeSet('"#<>');
  const encodeSpecialQuery = encodeSet("\"#<>'");
  const encodeFragment = encodeSet('"<>\u0060');
  const encodeUserinfo = encodeSet('"#<>?\u0060{}/:;=@[\\]^|');
  const invalid = (input) => new TypeError("Invalid URL: " + input);

  // Punycode (RFC 3492) for a non-ASCII label.
  const punycode = (label) => {
    const cps = [...label].map((c) => c.codePointAt(0));
    let out = cps.filter((c) => c < 128).map((c) => String.fromCharCode(c)).join("");
    const basic = out.length;
    let h = basic, n = 128, delta = 0, bias = 72;
    if (basic) out += "-";
    const digit = (d) => String.fromCharCode(d + 22 + 75 * (d < 26));
    const adapt = (d, points, first) => {
      d = first ? Math.floor(d / 700) : d >> 1;
      d += Math.floor(d / points);
      let k = 0;
      for (; d > 455; k += 36) d = Math.floor(d / 35);
      return k + Math.floor((36 * d) / (d + 38));
    };
    while (h < cps.length) {
      const m = Math.min(...cps.filter((c) => c >= n));
      delta += (m - n) * (h + 1);
      n = m;
      for (const c of cps) {
        if (c < n) delta++;
        if (c === n) {
          let q = delta;
          for (let k = 36; ; k += 36) {
            const t = k <= bias ? 1 : k >= bias + 26 ? 26 : k - bias;
            if (q < t) break;
            out += digit(t + ((q - t) % (36 - t)));
            q = Math.floor((q - t) / (36 - t));
          }
          out += digit(q);
          bias = adapt(delta, h + 1, h === basic);
          delta = 0;
          h++;
        }
      }
      delta++;
      n++;
    }
    return "xn--" + out;
  };
  const parseHost = (raw, special, input) => {
    if (raw.startsWith("[")) {
      if (!/^\[[0-9a-fA-F:.]+\]$/.test(raw)) throw invalid(input);
      return raw.toLowerCase();
    }
    if (!special) return encodeSet("")(raw);
    let host;
    try { host = decodeURIComponent(raw).toLowerCase(); } catch { throw invalid(input); }
    if (/[\u0000\t\n\r #/:<>?@[\\\]^|%]/.test(host)) throw invalid(input);
    host = host.split(".").map((l) => (/^[\x00-\x7f]*$/.test(l) ? l : punycode(l.normalize("NFC")))).join(".");
    if (host === "" ) throw invalid(input);
    return host;
  };
  const removeDots = (segments) => {
    const out = [];
    segments.forEach((s, i) => {
      const last = i === segments.length - 1;
      if (s === ".." || s.toLowerCase() === "%2e%2e") { out.pop(); if (last) out.push(""); }
      else if (s === "." || s.toLowerCase() === "%2e") { if (last) out.push(""); }
      else out.push(s);
    });
    return out;
  };

  const parse = (input, base) => {
    let s = String(input).replace(/^[\u0000-\u0020]+|[\u0000-\u0020]+$/g, "").replace(/[\t\n\r]/g, "");
    const r = { protocol: "", username: "", password: "", hostname: "", port: "", path: "", query: null, hash: null, opaque: false };
    const hashAt = s.indexOf("#");
    if (hashAt >= 0) { r.hash = encodeFragment(s.slice(hashAt + 1)); s = s.slice(0, hashAt); }
    const scheme = /^([a-zA-Z][a-zA-Z0-9+.-]*):/.exec(s);
    let rest;
    if (scheme) {
      r.protocol = scheme[1].toLowerCase() + ":";
      rest = s.slice(scheme[0].length);
      if (base && base.protocol === r.protocol && r.protocol in SPECIAL && !rest.startsWith("/")) return relative(rest, base, r, input);
    } else {
      if (!base) throw invalid(input);
      return relative(s, base, r, input);
    }
    const special = r.protocol in SPECIAL;
    if (special) rest = rest.replace(/\\/g, "/");
    if (special || rest.startsWith("//")) {
      if (!rest.startsWith("//") && special) rest = "//" + rest.replace(/^\/*/, "");
      rest = rest.replace(special ? /^\/+/ : /^\/\//, "");
      const end = rest.search(/[/?]/);
      const authority = end < 0 ? rest : rest.slice(0, end);
      rest = end < 0 ? "" : rest.slice(end);
      authorityInto(r, authority, special, input);
    } else if (!rest.startsWith("/")) {
      r.opaque = true;
    }
    return pathAndQuery(r, rest, special);
  };
  const authorityInto = (r, authority, special, input) => {
    const at = authority.lastIndexOf("@");
    if (at >= 0) {
      const info = authority.slice(0, at);
      const colon = info.indexOf(":");
      r.username = encodeUserinfo(colon < 0 ? info : info.slice(0, colon));
      r.password = colon < 0 ? "" : encodeUserinfo(info.slice(colon + 1));
      authority = authority.slice(at + 1);
    }
    const port = /:(\d*)$/.exec(authority);
    let host = authority;
    if (port && !authority.endsWith("]")) {
      host = authority.slice(0, port.index);
      if (port[1] !== "") {
        const n = Number(port[1]);
        if (n > 65535) throw invalid(input);
        r.port = String(n) === SPECIAL[r.protocol] ? "" : String(n);
      }
    } else if (/:[^\]]*$/.test(authority) && !authority.startsWith("[")) throw invalid(input);
    if (host === "" && special && r.protocol !== "file:") throw invalid(input);
    r.hostname = host === "" ? "" : parseHost(host, special, input);
  };
  const pathAndQuery = (r, rest, special) => {
    const q = rest.indexOf("?");
    const path = q < 0 ? rest : rest.slice(0, q);
    if (q >= 0) r.query = (special ? encodeSpecialQuery : encodeQuery)(rest.slice(q + 1));
    if (r.opaque) r.path = encodeSet("")(path);
    else {
      const segments = removeDots(path.split("/").slice(1).map(encodePath));
      r.path = "/" + segments.join("/");
      if (!special && path === "") r.path = "";
    }
    return r;
  };
  const relative = (s, base, r, input) => {
    if (base.opaque) { if (s === "" && r.hash !== null) return { ...base, hash: r.hash }; throw invalid(input); }
    const special = base.protocol in SPECIAL;
    if (special) s = s.replace(/\\/g, "/");
    Object.assign(r, { protocol: base.protocol });
    if (s.startsWith("//")) {
      const body = s.slice(2);
      const end = body.search(/[/?]/);
      authorityInto(r, end < 0 ? body : body.slice(0, end), special, input);
      return pathAndQuery(r, end < 0 ? "" : body.slice(end), special);
    }
    Object.assign(r, { username: base.username, password: base.password, hostname: base.hostname, port: base.port });
    if (s === "") return { ...r, path: base.path, query: base.query };
    if (s.startsWith("?")) { r.path = base.path; r.query = (special ? encodeSpecialQuery : encodeQuery)(s.slice(1)); return r; }
    if (s.startsWith("/")) return pathAndQuery(r, s, special);
    const dir = base.path.slice(0, base.path.lastIndexOf("/") + 1);
    return pathAndQuery(r, (dir || "/") + s, special);
  };

  const formEncode = (s) => encodeSet("!\"#$%&'()+,/:;<=>?@[\\]^\u0060{|}~")(String(s)).replace(/%20/g, "+").replace(/ /g, "+");
  const formDecode = (s) => {
    const bytes = [];
    const text = s.replace(/\+/g, " ");
    for (let i = 0; i < text.length; i++) {
      if (text[i] === "%" && /^[0-9a-fA-F]{2}$/.test(text.slice(i + 1, i + 3))) { bytes.push(parseInt(text.slice(i + 1, i + 3), 16)); i += 2; }
      else for (const b of enc.encode(text[i] === undefined ? "" : text.codePointAt(i) > 0xffff ? text.slice(i, ++i + 1) : text[i])) bytes.push(b);
    }
    return new g.TextDecoder().decode(new Uint8Array(bytes));
  };
  class URLSearchParams {
    #list = [];
    #owner = null;
    constructor(init = "") {
      if (typeof init === "object" && init !== null) {
        const pairs = Symbol.iterator in init ? [...init] : Object.entries(init);
        for (const pair of pairs) {
          const p = [...pair];
          if (p.length !== 2) throw new TypeError("URLSearchParams: each pair needs a name and a value");
          this.#list.push([String(p[0]), String(p[1])]);
        }
      } else this.#parse(String(init));
    }
    #parse(text) {
      this.#list = text.replace(/^\?/, "").split("&").filter((p) => p !== "").map((p) => {
        const eq = p.indexOf("=");
        return eq < 0 ? [formDecode(p), ""] : [formDecode(p.slice(0, eq)), formDecode(p.slice(eq + 1))];
      });
    }
    #changed() { if (this.#owner) this.#owner(this.toString()); }
    static _bind(params, owner, query) { params.#owner = null; params.#parse(query ?? ""); params.#owner = owner; }
    get size() { return this.#list.length; }
    append(name, value) { this.#list.push([String(name), String(value)]); this.#changed(); }
    delete(name, value) {
      this.#list = this.#list.filter(([n, v]) => n !== String(name) || (value !== undefined && v !== String(value)));
      this.#changed();
    }
    get(name) { const hit = this.#list.find(([n]) => n === String(name)); return hit ? hit[1] : null; }
    getAll(name) { return this.#list.filter(([n]) => n === String(name)).map(([, v]) => v); }
    has(name, value) { return this.#list.some(([n, v]) => n === String(name) && (value === undefined || v === String(value))); }
    set(name, value) {
      const i = this.#list.findIndex(([n]) => n === String(name));
      if (i < 0) this.#list.push([String(name), String(value)]);
      else { this.#list[i] = [String(name), String(value)]; this.#list = this.#list.filter(([n], j) => j <= i || n !== String(name)); }
      this.#changed();
    }
    sort() { this.#list.sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)); this.#changed(); }
    forEach(callback, thisArg) { for (const [n, v] of this.#list) callback.call(thisArg, v, n, this); }
    *entries() { for (const [n, v] of this.#list) yield [n, v]; }
    *keys() { for (const [n] of this.#list) yield n; }
    *values() { for (const [, v] of this.#list) yield v; }
    [Symbol.iterator]() { return this.entries(); }
    toString() { return this.#list.map(([n, v]) => formEncode(n) + "=" + formEncode(v)).join("&"); }
  }
  const bindParams = URLSearchParams._bind;
  delete URLSearchParams._bind;

  class URL {
    #r; #params;
    constructor(input, base) {
      const b = base === undefined ? null : new URL(String(base)).#r;
      this.#r = parse(String(input), b);
      this.#params = new URLSearchParams();
      bindParams(this.#params, (q) => { this.#r.query = q === "" ? null : q; }, this.#r.query);
    }
    static canParse(input, base) { try { new URL(input, base); return true; } catch { return false; } }
    static parse(input, base) { try { return new URL(input, base); } catch { return null; } }
    get protocol() { return this.#r.protocol; }
    get username() { return this.#r.username; }
    get password() { return this.#r.password; }
    get hostname() { return this.#r.hostname; }
    get port() { return this.#r.port; }
    get host() { return this.#r.hostname + (this.#r.port ? ":" + this.#r.port : ""); }
    get origin() { return this.#r.protocol in SPECIAL && this.#r.protocol !== "file:" ? this.#r.protocol + "//" + this.host : "null"; }
    get pathname() { return this.#r.path; }
    get search() { return this.#r.query ? "?" + this.#r.query : ""; }
    set search(value) { const v = String(value).replace(/^\?/, ""); this.#r.query = v === "" ? null : encodeQuery(v); bindParams(this.#params, (q) => { this.#r.query = q === "" ? null : q; }, this.#r.query); }
    get searchParams() { return this.#params; }
    get hash() { return this.#r.hash ? "#" + this.#r.hash : ""; }
    set hash(value) { const v = String(value).replace(/^#/, ""); this.#r.hash = v === "" ? null : encodeFragment(v); }
    get href() {
      const r = this.#r;
      const auth = r.username || r.password ? r.username + (r.password ? ":" + r.password : "") + "@" : "";
      const slashes = r.opaque ? "" : r.hostname !== "" || r.protocol in SPECIAL ? "//" : "";
      return r.protocol + slashes + auth + this.host + r.path + (r.query !== null ? "?" + r.query : "") + (r.hash !== null ? "#" + r.hash : "");
    }
    toString() { return this.href; }
    toJSON() { return this.href; }
  }
  define("URLSearchParams", URLSearchParams);
  define("URL", URL);
}`;
