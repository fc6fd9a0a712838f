"use strict";(self.rspackChunkreplay_enclave=self.rspackChunkreplay_enclave||[]).push([[232],{"./node_modules/css-loader/dist/cjs.js!./style/base.css"(e,a,r){var t=r("./node_modules/css-loader/dist/runtime/noSourceMaps.js"),i=r.n(t),o=r("./node_modules/css-loader/dist/runtime/api.js"),l=(r.n(o))()(i());l.push([e.id,`/* Theme-aware: JupyterLab CSS variables only, so light and dark themes both read.
   Every rule is scoped to the viewer: the notebook panel's HTML uses some of the same
   class names with styles of its own. */

.enclave-certificate-viewer {
  overflow: auto;
  padding: 12px 20px;
  color: var(--jp-ui-font-color1);
  background: var(--jp-layout-color0);
  font-family: var(--jp-ui-font-family);
  font-size: var(--jp-ui-font-size1);
}

.enclave-certificate-viewer .enclave-finding {
  font-size: var(--jp-content-font-size2);
  max-width: 60em;
  margin: 4px 0 8px;
}

.enclave-certificate-viewer .enclave-certificate h2 {
  font-size: var(--jp-ui-font-size3);
  margin: 8px 0;
}

.enclave-certificate-viewer .enclave-section h3,
.enclave-certificate-viewer .enclave-verification h3 {
  font-size: var(--jp-ui-font-size2);
  margin: 16px 0 6px;
  border-bottom: 1px solid var(--jp-border-color2);
}

.enclave-certificate-viewer .enclave-classification {
  display: inline-block;
  padding: 2px 10px;
  border-radius: 10px;
  font-weight: bold;
  color: var(--jp-ui-inverse-font-color0);
  background: var(--jp-brand-color1);
}

.enclave-certificate-viewer .enclave-classification[data-classification='influential'],
.enclave-certificate-viewer .enclave-classification[data-classification='decision-flips'] {
  background: var(--jp-warn-color0);
}

.enclave-certificate-viewer .enclave-classification[data-classification='equivalent'],
.enclave-certificate-viewer .enclave-classification[data-classification='no-measurable-influence'] {
  background: var(--jp-success-color0);
}

.enclave-certificate-viewer .enclave-classification[data-classification='baseline-not-reproduced'] {
  background: var(--jp-error-color0);
}

.enclave-certificate-viewer .enclave-auditability {
  padding: 2px 8px;
  border: 1px solid var(--jp-border-color1);
  border-radius: 10px;
}

.enclave-certificate-viewer .enclave-question {
  display: grid;
  grid-template-columns: max-content auto;
  gap: 2px 16px;
  margin: 0;
}

.enclave-certificate-viewer .enclave-question dt {
  color: var(--jp-ui-font-color2);
}

.enclave-certificate-viewer .enclave-question dd {
  margin: 0;
}

.enclave-certificate-viewer .enclave-table {
  border-collapse: collapse;
  margin: 6px 0 10px;
}

.enclave-certificate-viewer .enclave-table caption {
  text-align: left;
  white-space: nowrap;
  color: var(--jp-ui-font-color2);
  padding-bottom: 4px;
}

.enclave-certificate-viewer .enclave-table th,
.enclave-certificate-viewer .enclave-table td {
  border: 1px solid var(--jp-border-color2);
  padding: 3px 8px;
  text-align: left;
  vertical-align: top;
}

.enclave-certificate-viewer .enclave-table thead th {
  background: var(--jp-layout-color2);
}

.enclave-certificate-viewer .enclave-charts {
  display: flex;
  flex-wrap: wrap;
  gap: 16px;
}

.enclave-certificate-viewer .enclave-charts figure {
  margin: 0;
}

.enclave-certificate-viewer .enclave-charts figcaption {
  color: var(--jp-ui-font-color2);
}

.enclave-certificate-viewer .enclave-histogram,
.enclave-certificate-viewer .enclave-flip-chart {
  width: 460px;
  max-width: 100%;
  height: auto;
}

.enclave-certificate-viewer .enclave-bar {
  fill: var(--jp-brand-color1);
}

.enclave-certificate-viewer .enclave-axis {
  stroke: var(--jp-ui-font-color2);
  stroke-width: 1;
}

.enclave-certificate-viewer .enclave-zero {
  stroke: var(--jp-ui-font-color1);
  stroke-dasharray: 4 3;
}

.enclave-certificate-viewer .enclave-tick,
.enclave-certificate-viewer .enclave-label {
  fill: var(--jp-ui-font-color1);
  font-size: 10px;
}

.enclave-certificate-viewer .enclave-interval {
  fill: var(--jp-brand-color3);
  stroke: var(--jp-brand-color1);
}

.enclave-certificate-viewer .enclave-estimate {
  fill: var(--jp-ui-font-color0);
}

.enclave-certificate-viewer .enclave-tolerance {
  fill: var(--jp-layout-color3);
  opacity: 0.6;
}

.enclave-certificate-viewer .enclave-bound {
  stroke: var(--jp-warn-color0);
  stroke-width: 2;
}

.enclave-certificate-viewer .enclave-verify-bar {
  display: flex;
  align-items: center;
  gap: 12px;
  padding: 6px 0;
  position: sticky;
  top: 0;
  background: var(--jp-layout-color0);
  border-bottom: 1px solid var(--jp-border-color2);
}

.enclave-certificate-viewer .enclave-verify-button:focus-visible {
  outline: 2px solid var(--jp-brand-color1);
  outline-offset: 2px;
}

.enclave-certificate-viewer .enclave-verify-status[data-state='verified'] {
  color: var(--jp-success-color0);
  font-weight: bold;
}

.enclave-certificate-viewer .enclave-verify-status[data-state='failed'] {
  color: var(--jp-error-color0);
  font-weight: bold;
}

.enclave-certificate-viewer .enclave-verify-cell[data-ok='true'] .enclave-verdict {
  color: var(--jp-success-color0);
}

.enclave-certificate-viewer .enclave-verify-cell[data-ok='false'] .enclave-verdict {
  color: var(--jp-error-color0);
}

.enclave-certificate-viewer .enclave-verify-table {
  width: 100%;
  table-layout: fixed;
}

.enclave-certificate-viewer .enclave-verify-table th:first-child {
  width: 7em;
}

.enclave-certificate-viewer .enclave-verify-detail {
  display: block;
  overflow-wrap: anywhere;
  color: var(--jp-ui-font-color2);
}

.enclave-certificate-viewer .enclave-first-failure th,
.enclave-certificate-viewer .enclave-first-failure td {
  background: var(--jp-layout-color2);
  border-top: 2px solid var(--jp-error-color1);
  border-bottom: 2px solid var(--jp-error-color1);
}

.enclave-certificate-viewer .enclave-first-failure th {
  border-left: 6px solid var(--jp-error-color1);
}

.enclave-certificate-viewer .enclave-unreadable {
  color: var(--jp-error-color0);
}

/* The Enclave sidebar, its request form and the status-bar item: JupyterLab variables
   only, scoped to their own roots. */

.enclave-sidebar {
  overflow: auto;
  padding: 8px 12px;
  color: var(--jp-ui-font-color1);
  background: var(--jp-layout-color1);
  font-family: var(--jp-ui-font-family);
  font-size: var(--jp-ui-font-size1);
  min-width: 280px;
}

.enclave-sidebar .enclave-sb-header {
  display: flex;
  align-items: center;
  justify-content: space-between;
}

.enclave-sidebar h2 {
  font-size: var(--jp-ui-font-size2);
  margin: 4px 0;
}

.enclave-sidebar h3 {
  font-size: var(--jp-ui-font-size1);
  text-transform: uppercase;
  letter-spacing: 0.04em;
  color: var(--jp-ui-font-color2);
  margin: 14px 0 6px;
  border-bottom: 1px solid var(--jp-border-color2);
}

.enclave-sidebar dl.enclave-sb-whoami {
  display: grid;
  grid-template-columns: max-content 1fr;
  gap: 2px 10px;
  margin: 0;
}

.enclave-sidebar dl.enclave-sb-whoami dt {
  color: var(--jp-ui-font-color2);
}

.enclave-sidebar dl.enclave-sb-whoami dd {
  margin: 0;
}

.enclave-sidebar dd[data-field='budget'] {
  color: var(--jp-ui-font-color2);
  font-style: italic;
}

.enclave-sidebar .enclave-sb-filters {
  display: flex;
  flex-wrap: wrap;
  gap: 4px;
  margin-bottom: 6px;
}

.enclave-sidebar input,
.enclave-sidebar select {
  color: var(--jp-ui-font-color1);
  background: var(--jp-input-background);
  border: 1px solid var(--jp-input-border-color);
  border-radius: 2px;
  padding: 2px 4px;
  font-family: var(--jp-ui-font-family);
  font-size: var(--jp-ui-font-size1);
  min-width: 0;
}

.enclave-sidebar input:focus-visible,
.enclave-sidebar select:focus-visible,
.enclave-sidebar button:focus-visible,
.enclave-status-running:focus-visible {
  outline: 2px solid var(--jp-brand-color1);
  outline-offset: 1px;
}

.enclave-sidebar [aria-invalid='true'] {
  border-color: var(--jp-error-color1);
}

.enclave-sidebar .enclave-sb-table {
  width: 100%;
  border-collapse: collapse;
  table-layout: fixed;
}

.enclave-sidebar .enclave-sb-table th,
.enclave-sidebar .enclave-sb-table td {
  text-align: left;
  padding: 2px 4px;
  border-bottom: 1px solid var(--jp-border-color3);
  overflow: hidden;
  text-overflow: ellipsis;
  white-space: nowrap;
}

.enclave-sidebar .enclave-sb-id {
  font-family: var(--jp-code-font-family);
  font-size: var(--jp-code-font-size);
}

.enclave-sidebar .enclave-sb-count,
.enclave-sidebar .enclave-sb-hint {
  color: var(--jp-ui-font-color2);
  font-size: var(--jp-ui-font-size0);
  margin: 4px 0;
}

.enclave-sidebar .enclave-sb-request {
  margin: 12px 0 4px;
}

.enclave-sidebar .enclave-sb-form {
  border: 1px solid var(--jp-border-color2);
  border-radius: 4px;
  padding: 4px 10px 10px;
  background: var(--jp-layout-color0);
}

.enclave-sidebar [hidden] {
  display: none !important;
}

/* label above its control: the left area is narrow */
.enclave-sidebar .enclave-sb-row {
  display: flex;
  flex-direction: column;
  gap: 2px;
  margin: 6px 0;
}

.enclave-sidebar .enclave-sb-row label {
  color: var(--jp-ui-font-color2);
}

.enclave-sidebar .enclave-sb-row .enclave-sb-hint {
  margin: 0;
}

.enclave-sidebar .enclave-sb-actions {
  margin-top: 8px;
}

.enclave-sidebar .enclave-sb-error {
  color: var(--jp-error-color1);
  background: var(--jp-error-color3);
  border-left: 3px solid var(--jp-error-color1);
  padding: 4px 8px;
  margin: 6px 0;
}

.enclave-sidebar .enclave-sb-requested {
  color: var(--jp-success-color1);
  margin: 6px 0;
}

.enclave-sidebar ul.enclave-sb-audits {
  list-style: none;
  padding: 0;
  margin: 0;
}

.enclave-sidebar li.enclave-sb-audit {
  border-bottom: 1px solid var(--jp-border-color3);
  padding: 6px 0;
}

.enclave-sidebar .enclave-sb-audit-head,
.enclave-sidebar .enclave-sb-audit-progress {
  display: flex;
  align-items: center;
  justify-content: space-between;
  gap: 6px;
}

.enclave-sidebar .enclave-sb-status {
  font-weight: bold;
  color: var(--jp-info-color1);
}

.enclave-sidebar .enclave-sb-status[data-status='COMPLETED'] {
  color: var(--jp-success-color1);
}

.enclave-sidebar .enclave-sb-status[data-status='FAILED'],
.enclave-sidebar .enclave-sb-status[data-status='CANCELLED'] {
  color: var(--jp-error-color1);
}

.enclave-sidebar progress.enclave-sb-progress {
  flex: 1;
  accent-color: var(--jp-brand-color1);
}

.enclave-sidebar .enclave-sb-classification,
.enclave-sidebar .enclave-sb-failure {
  display: inline-block;
  margin: 2px 6px 2px 0;
  color: var(--jp-ui-font-color2);
}

.enclave-sidebar .enclave-sb-finding {
  margin: 2px 0;
  font-size: var(--jp-ui-font-size0);
  color: var(--jp-ui-font-color1);
}

.enclave-sidebar .enclave-sb-audit-actions {
  display: flex;
  gap: 4px;
  margin-top: 4px;
}

.enclave-status-running {
  background: none;
  border: none;
  color: var(--jp-ui-font-color1);
  font-family: var(--jp-ui-font-family);
  font-size: var(--jp-ui-font-size0);
  cursor: pointer;
  padding: 0 6px;
}

.enclave-status-running[data-running='0'] {
  color: var(--jp-ui-font-color2);
}

.enclave-sidebar .enclave-sb-filters input,
.enclave-sidebar .enclave-sb-filters select {
  flex: 1 1 100px;
}

/* The release report view (the viewer's other kind of statement). */

.enclave-certificate-viewer .enclave-report h2 {
  font-size: var(--jp-ui-font-size3);
  margin: 8px 0;
}

.enclave-certificate-viewer .enclave-gate {
  display: inline-block;
  padding: 4px 10px;
  border-radius: 4px;
  font-weight: bold;
  border: 1px solid var(--jp-border-color1);
}

.enclave-certificate-viewer .enclave-gate[data-passed='true'] {
  color: var(--jp-success-color0);
  border-color: var(--jp-success-color1);
}

.enclave-certificate-viewer .enclave-gate[data-passed='false'] {
  color: var(--jp-error-color0);
  border-color: var(--jp-error-color1);
}

.enclave-certificate-viewer .enclave-report-label {
  font-family: var(--jp-code-font-family);
}

.enclave-certificate-viewer .enclave-report-label[data-label='decision-changed'],
.enclave-certificate-viewer .enclave-report-label[data-label='not-auditable'] {
  color: var(--jp-error-color1);
}

.enclave-certificate-viewer .enclave-report-label[data-label='layer-changed'],
.enclave-certificate-viewer .enclave-report-label[data-label='inconclusive'] {
  color: var(--jp-warn-color1);
}

.enclave-certificate-viewer .enclave-report-label[data-label='equivalent'] {
  color: var(--jp-success-color1);
}

.enclave-certificate-viewer .enclave-report-row[data-failing='true'] {
  background: var(--jp-error-color3);
}

.enclave-certificate-viewer .enclave-report-must-hold[data-failing='true'] {
  font-weight: bold;
  color: var(--jp-error-color0);
}

.enclave-certificate-viewer .enclave-report-facts {
  display: grid;
  grid-template-columns: max-content auto;
  gap: 2px 16px;
  margin: 0;
}

.enclave-certificate-viewer .enclave-report-facts dt {
  color: var(--jp-ui-font-color2);
}

.enclave-certificate-viewer .enclave-report-facts dd {
  margin: 0;
}

.enclave-certificate-viewer .enclave-report-baseline {
  margin: 0;
  padding-left: 0;
  list-style: none;
}

.enclave-certificate-viewer .enclave-report-facts dd,
.enclave-certificate-viewer .enclave-report-specimen {
  font-family: var(--jp-code-font-family);
  word-break: break-all;
}

.enclave-sidebar li.enclave-sb-report {
  padding: 4px 0;
  border-bottom: 1px solid var(--jp-border-color2);
}

.enclave-sidebar .enclave-sb-report-head {
  display: flex;
  justify-content: space-between;
  gap: 8px;
}

.enclave-sidebar .enclave-sb-gate {
  font-weight: bold;
}

.enclave-sidebar .enclave-sb-gate[data-passed='true'] {
  color: var(--jp-success-color1);
}

.enclave-sidebar .enclave-sb-gate[data-passed='false'] {
  color: var(--jp-error-color1);
}

.enclave-sidebar ul.enclave-sb-reports {
  list-style: none;
  margin: 0;
  padding: 0;
}
`,""]),r.d(a,{},{A:l})},"./node_modules/css-loader/dist/runtime/api.js"(e){e.exports=function(e){var a=[];return a.toString=function(){return this.map(function(a){var r="",t=void 0!==a[5];return a[4]&&(r+="@supports (".concat(a[4],") {")),a[2]&&(r+="@media ".concat(a[2]," {")),t&&(r+="@layer".concat(a[5].length>0?" ".concat(a[5]):""," {")),r+=e(a),t&&(r+="}"),a[2]&&(r+="}"),a[4]&&(r+="}"),r}).join("")},a.i=function(e,r,t,i,o){"string"==typeof e&&(e=[[null,e,void 0]]);var l={};if(t)for(var c=0;c<this.length;c++){var n=this[c][0];null!=n&&(l[n]=!0)}for(var s=0;s<e.length;s++){var v=[].concat(e[s]);t&&l[v[0]]||(void 0!==o&&(void 0===v[5]||(v[1]="@layer".concat(v[5].length>0?" ".concat(v[5]):""," {").concat(v[1],"}")),v[5]=o),r&&(v[2]&&(v[1]="@media ".concat(v[2]," {").concat(v[1],"}")),v[2]=r),i&&(v[4]?(v[1]="@supports (".concat(v[4],") {").concat(v[1],"}"),v[4]=i):v[4]="".concat(i)),a.push(v))}},a}},"./node_modules/css-loader/dist/runtime/noSourceMaps.js"(e){e.exports=function(e){return e[1]}},"./node_modules/style-loader/dist/runtime/injectStylesIntoStyleTag.js"(e){var a=[];function r(e){for(var r=-1,t=0;t<a.length;t++)if(a[t].identifier===e){r=t;break}return r}function t(e,t){for(var i={},o=[],l=0;l<e.length;l++){var c=e[l],n=t.base?c[0]+t.base:c[0],s=i[n]||0,v="".concat(n," ").concat(s);i[n]=s+1;var d=r(v),p={css:c[1],media:c[2],sourceMap:c[3],supports:c[4],layer:c[5]};if(-1!==d)a[d].references++,a[d].updater(p);else{var f=function(e,a){var r=a.domAPI(a);return r.update(e),function(a){a?(a.css!==e.css||a.media!==e.media||a.sourceMap!==e.sourceMap||a.supports!==e.supports||a.layer!==e.layer)&&r.update(e=a):r.remove()}}(p,t);t.byIndex=l,a.splice(l,0,{identifier:v,updater:f,references:1})}o.push(v)}return o}e.exports=function(e,i){var o=t(e=e||[],i=i||{});return function(e){e=e||[];for(var l=0;l<o.length;l++){var c=r(o[l]);a[c].references--}for(var n=t(e,i),s=0;s<o.length;s++){var v=r(o[s]);0===a[v].references&&(a[v].updater(),a.splice(v,1))}o=n}}},"./node_modules/style-loader/dist/runtime/insertBySelector.js"(e){var a={};e.exports=function(e,r){var t=function(e){if(void 0===a[e]){var r=document.querySelector(e);if(window.HTMLIFrameElement&&r instanceof window.HTMLIFrameElement)try{r=r.contentDocument.head}catch(e){r=null}a[e]=r}return a[e]}(e);if(!t)throw Error("Couldn't find a style target. This probably means that the value for the 'insert' parameter is invalid.");t.appendChild(r)}},"./node_modules/style-loader/dist/runtime/insertStyleElement.js"(e){e.exports=function(e){var a=document.createElement("style");return e.setAttributes(a,e.attributes),e.insert(a,e.options),a}},"./node_modules/style-loader/dist/runtime/setAttributesWithoutAttributes.js"(e,a,r){e.exports=function(e){var a=r.nc;a&&e.setAttribute("nonce",a)}},"./node_modules/style-loader/dist/runtime/styleDomAPI.js"(e){e.exports=function(e){if("u"<typeof document)return{update:function(){},remove:function(){}};var a=e.insertStyleElement(e);return{update:function(r){var t,i,o;t="",r.supports&&(t+="@supports (".concat(r.supports,") {")),r.media&&(t+="@media ".concat(r.media," {")),(i=void 0!==r.layer)&&(t+="@layer".concat(r.layer.length>0?" ".concat(r.layer):""," {")),t+=r.css,i&&(t+="}"),r.media&&(t+="}"),r.supports&&(t+="}"),(o=r.sourceMap)&&"u">typeof btoa&&(t+="\n/*# sourceMappingURL=data:application/json;base64,".concat(btoa(unescape(encodeURIComponent(JSON.stringify(o))))," */")),e.styleTagTransform(t,a,e.options)},remove:function(){var e;null===(e=a).parentNode||e.parentNode.removeChild(e)}}}},"./node_modules/style-loader/dist/runtime/styleTagTransform.js"(e){e.exports=function(e,a){if(a.styleSheet)a.styleSheet.cssText=e;else{for(;a.firstChild;)a.removeChild(a.firstChild);a.appendChild(document.createTextNode(e))}}},"./style/index.js"(e,a,r){var t=r("./node_modules/style-loader/dist/runtime/injectStylesIntoStyleTag.js"),i=r.n(t),o=r("./node_modules/style-loader/dist/runtime/styleDomAPI.js"),l=r.n(o),c=r("./node_modules/style-loader/dist/runtime/insertBySelector.js"),n=r.n(c),s=r("./node_modules/style-loader/dist/runtime/setAttributesWithoutAttributes.js"),v=r.n(s),d=r("./node_modules/style-loader/dist/runtime/insertStyleElement.js"),p=r.n(d),f=r("./node_modules/style-loader/dist/runtime/styleTagTransform.js"),u=r.n(f),b=r("./node_modules/css-loader/dist/cjs.js!./style/base.css"),m={};m.styleTagTransform=u(),m.setAttributes=v(),m.insert=n().bind(null,"head"),m.domAPI=l(),m.insertStyleElement=p(),i()(b.A,m),b.A&&b.A.locals&&b.A.locals}}]);