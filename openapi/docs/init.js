// init.js - starts Swagger UI on /docs with the service's own /openapi.json.
// Paths are relative to the page, so the reference also works behind a
// gateway that serves text2sqld under a prefix, and "Try it out" calls the
// service that served the page (its URL is put first in the document's
// servers). Nothing is fetched from anywhere but this service: the spec
// validator badge is off.
window.addEventListener("load", function () {
  var specUrl = new URL("openapi.json", document.baseURI).href;
  var here = new URL(".", document.baseURI).href.replace(/\/$/, "");
  fetch(specUrl, {headers: {Accept: "application/json"}})
    .then(function (r) {
      if (!r.ok) throw new Error("GET " + specUrl + " answered " + r.status);
      return r.json();
    })
    .then(function (spec) {
      spec.servers = [{url: here, description: "This service (the one serving this page)"}]
        .concat(spec.servers || []);
      // Swagger UI renders only OpenAPI 3.1's default dialect and shows a warning box for any other
      // jsonSchemaDialect; the document's schemas are plain JSON Schema 2020-12, which that default
      // dialect includes, so the page's copy drops the field (the document itself keeps it).
      delete spec.jsonSchemaDialect;
      window.ui = SwaggerUIBundle({
        spec: spec,
        dom_id: "#swagger-ui",
        deepLinking: true,
        validatorUrl: null,
        displayRequestDuration: true,
        persistAuthorization: false,
        presets: [SwaggerUIBundle.presets.apis],
        layout: "BaseLayout",
        onComplete: function () {
          document.body.setAttribute("data-docs-ready", "true");
        }
      });
    })
    .catch(function (e) {
      var p = document.createElement("p");
      p.textContent = "The API reference could not load the document: " + e.message;
      document.getElementById("swagger-ui").appendChild(p);
    });
});
