enum ReactorPlaceholder {}
