console.log(require("abx-banner")("multi"));
