// init.js - starts Swagger UI on /docs with the service's own /openapi.json.
// Paths are relative to the page, so the reference also works behind a
// gateway that serves text2sqld under a prefix. Nothing is fetched from
// anywhere but this service: the spec validator badge is off.
window.addEventListener("load", function () {
  window.ui = SwaggerUIBundle({
    url: new URL("openapi.json", document.baseURI).href,
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
});
