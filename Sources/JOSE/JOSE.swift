public enum JOSEPlaceholder {}
