// Starts Swagger UI on /docs with the documents the page lists (data-documents on #swagger-ui):
// no inline script (the page's Content-Security-Policy allows scripts from this origin only),
// no validator badge (it would call validator.swagger.io), no ?url= from the address bar.
window.addEventListener("DOMContentLoaded", function () {
  var root = document.getElementById("swagger-ui");
  var documents = JSON.parse(root.getAttribute("data-documents"));
  window.ui = SwaggerUIBundle({
    dom_id: "#swagger-ui",
    urls: documents,
    "urls.primaryName": documents[0].name,
    presets: [SwaggerUIBundle.presets.apis, SwaggerUIStandalonePreset],
    plugins: [SwaggerUIBundle.plugins.DownloadUrl],
    layout: "StandaloneLayout",
    validatorUrl: null,
    queryConfigEnabled: false,
    deepLinking: true,
    tryItOutEnabled: false,
    displayOperationId: true,  // what generated clients call each operation
  });
});
